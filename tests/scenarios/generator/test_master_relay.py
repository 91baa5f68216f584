"""The Locust master's relay turns workers' messages into the runner's control and part files, and lets
only nodes that proved the cluster secret in: the rest is refused or dropped and counted."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import pandas as pd
import pytest

from rushhour.scenarios.generator import clusterauth, master_relay
from rushhour.scenarios.generator.clocksync import software_version
from rushhour.scenarios.generator.master_relay import (
    MSG_CHALLENGE,
    MSG_CONFIG,
    MSG_CPU,
    MSG_DONE,
    MSG_HELLO,
    MSG_PART,
    MSG_PING,
    MSG_PONG,
    MSG_PROVE,
    MSG_READY,
    MSG_REFUSED,
    MSG_START,
    REJECTIONS_FILE,
    STATE_IDLE,
    STATE_MISSING,
    STATE_SPAWNING,
    MasterRelay,
)
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import publish_start


@dataclass
class Msg:
    data: Any
    node_id: str


@dataclass
class Client:
    state: str = "running"


@dataclass
class FakeRunner:
    """Just what the relay uses of Locust's MasterRunner."""

    handlers: dict[str, Any] = field(default_factory=dict)
    sent: list[tuple[str, Any, str | None]] = field(default_factory=list)
    clients: dict[str, Client] = field(default_factory=dict)
    state: str = "running"
    target_user_count: int = 0
    started: list[tuple[int, float]] = field(default_factory=list)

    def start(self, user_count: int, spawn_rate: float) -> None:
        """As Locust's start does for the workers it knows: each is given users."""
        self.started.append((user_count, spawn_rate))
        for client in self.clients.values():
            client.state = "spawning"

    def register_message(self, name: str, handler: Any) -> None:
        self.handlers[name] = handler

    def send_message(self, name: str, data: Any = None, client_id: str | None = None) -> None:
        self.sent.append((name, data, client_id))

    def say(self, name: str, data: Any, node_id: str) -> None:
        self.clients.setdefault(node_id, Client())
        self.handlers[name](environment=None, msg=Msg(data, node_id))


SECRET = "s3cret-for-the-drill-tests"


def _relay(tmp_path: Path, secret: str | None = SECRET) -> tuple[MasterRelay, FakeRunner, Path]:
    pd.DataFrame({"offset_s": [0.0, 0.1, 0.2]}).to_parquet(tmp_path / "schedule.parquet")
    for folder in ("control", "parts"):
        (tmp_path / folder).mkdir()
    (tmp_path / "ca.pem").write_text("the master's CA bundle", encoding="utf-8")
    config = LoadSettings(host="http://127.0.0.1:1", schedule_path=tmp_path / "schedule.parquet", work_dir=tmp_path,
                          duration_s=1.0, remote_workers=2, timeout_margin_s=1.0,
                          target={"protocol": "rushhour", "auth": {"file": "/etc/shadow"},
                                  "ca_bundle": str(tmp_path / "ca.pem")})
    runner = FakeRunner()
    return MasterRelay(runner, config, secret).install(), runner, tmp_path / "control"


@dataclass
class Worker:
    """A worker's side of the handshake and its signed messages, as `WorkerRelay` sends them."""

    runner: FakeRunner
    node: str
    secret: str | None = SECRET
    version: str = field(default_factory=software_version)
    key: bytes = b""
    index: int = -1
    seq: int = 0
    nonce: str = ""
    ours: str = field(default_factory=clusterauth.new_nonce)
    master_proven: bool = False

    def join(self) -> tuple[str, Any]:
        self.runner.say(MSG_HELLO, {"host": self.node, "nonce": self.ours}, self.node)
        name, data, to = self.runner.sent[-1]
        assert (name, to) == (MSG_CHALLENGE, self.node)
        self.nonce = data["nonce"]
        expected = clusterauth.master_proof(self.secret, self.ours, self.nonce, self.node)
        self.master_proven = clusterauth.same(data["proof"], expected)
        self.key = clusterauth.session_key(self.secret, self.nonce, self.node, self.ours)
        self.runner.say(MSG_PROVE, self.prove_data(), self.node)
        name, data, _ = self.runner.sent[-1]
        if name == MSG_CONFIG:
            self.index = data["index"]
        return name, data

    def prove_data(self) -> dict[str, Any]:
        return {"proof": clusterauth.proof(self.secret, self.nonce, self.node), "version": self.version,
                "host": self.node}

    def signed(self, msg_type: str, data: dict[str, Any]) -> dict[str, Any]:
        self.seq += 1
        return clusterauth.signed(self.key, msg_type, data, self.seq)

    def say(self, msg_type: str, data: dict[str, Any]) -> None:
        self.runner.say(msg_type, self.signed(msg_type, data), self.node)


def _rejections(control: Path) -> dict[str, Any]:
    return json.loads((control / REJECTIONS_FILE).read_text())


def test_master_relay_hands_a_proven_worker_its_settings_and_writes_what_it_reports(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    name, data = Worker(runner, "node-a").join()
    assert (name, data["index"], data["config"]["remote_workers"]) == (MSG_CONFIG, 0, 2)
    assert data["schedule"] == (tmp_path / "schedule.parquet").read_bytes()
    sent = data["config"]["target"]
    assert sent["protocol"] == "rushhour" and not {"auth", "ca_bundle"} & set(sent), "a local file or credential was sent"
    assert LoadSettings.arrive(data["config"], source="the master's message").workers == 2
    w = Worker(runner, "node-b")
    assert w.join()[1]["index"] == 1
    w.say(MSG_READY, {"index": 1, "rows": 1, "offset_s": 0.25, "rtt_s": 0.001})
    assert (control / "ready-1").read_text() == "1"
    assert json.loads((control / "clock-1.json").read_text())["clock_offset_ms"] == 250.0
    w.say(MSG_PART, {"index": 1, "name": "part-w001-000000.parquet", "data": b"PAR1"})
    w.say(MSG_PART, {"index": 1, "name": "../escape.parquet", "data": b"x"})
    assert [p.name for p in (tmp_path / "parts").iterdir()] == ["part-w001-000000.parquet"]
    w.say(MSG_DONE, {"index": 1, "failed": "RuntimeError: boom"})
    assert (control / "done-1").exists() and "boom" in (control / "failed-1").read_text()


def test_master_relay_proves_the_secret_to_a_worker_and_signs_every_message_it_sends_it(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    honest, other_secret = Worker(runner, "node-a"), Worker(runner, "node-b", secret="another-secret-of-length")
    honest.join(), other_secret.join()
    assert honest.master_proven and not other_secret.master_proven
    honest.say(MSG_PING, {"index": 0, "sent": 5.0})
    to_honest = [(name, data) for name, data, to in runner.sent if to == "node-a" and name != MSG_CHALLENGE]
    assert [name for name, _ in to_honest] == [MSG_CONFIG, MSG_PONG]
    assert all(clusterauth.verify(honest.key, name, data) for name, data in to_honest)
    assert [data["seq"] for _, data in to_honest] == [1, 2], "the master's sequence numbers do not rise"
    runner.say(MSG_PING, {"index": 0, "sent": 5.0}, "node-a")  # an unsigned ping gets no answer
    assert sum(name == MSG_PONG for name, _, _ in runner.sent) == 1
    runner.say(MSG_HELLO, {"host": "no-nonce"}, "node-c")  # an old-style hello: no challenge for it
    assert not any(to == "node-c" for _, _, to in runner.sent)
    assert _rejections(control)["dropped"] == {MSG_PING: 1, MSG_HELLO: 1}


def test_master_relay_refuses_a_wrong_secret_without_telling_its_version_or_failing_the_run(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    name, data = Worker(runner, "stranger", secret="not-the-secret-at-all-000").join()
    assert name == MSG_REFUSED and "the cluster secret did not match" in data["reason"]
    assert "rushhour" not in data["reason"], "the refusal told an unproven node the master's version"
    assert not list(control.glob("failed-*")) and not list(control.glob("ready-*"))
    assert Worker(runner, "rightful").join()[1]["index"] == 0, "the run did not go on waiting for a rightful worker"
    assert _rejections(control)["refused"] == [data["reason"]]


def test_master_relay_refuses_a_replayed_hello(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    honest = Worker(runner, "node-a")
    honest.join()
    recorded = honest.prove_data()
    runner.say(MSG_PROVE, recorded, "node-a")  # no challenge pending: dropped
    runner.say(MSG_HELLO, {"host": "evil", "nonce": clusterauth.new_nonce()}, "node-a")
    runner.say(MSG_PROVE, recorded, "node-a")  # a fresh nonce was asked: the old proof does not fit
    assert runner.sent[-1][0] == MSG_REFUSED and "did not match" in runner.sent[-1][1]["reason"]
    assert _rejections(control)["dropped"] == {MSG_PROVE: 1}
    assert not (control / "ready-1").exists() and not any(m[0] == MSG_CONFIG and m[1]["index"] == 1
                                                          for m in runner.sent)


def test_master_relay_drops_a_forged_part_for_another_workers_index(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    victim, forger = Worker(runner, "node-a"), Worker(runner, "node-b")
    victim.join(), forger.join()
    forged = forger.signed(MSG_PART, {"index": 0, "name": "part-w000-000000.parquet", "data": b"FAKE"})
    runner.say(MSG_PART, forged, "node-b")  # the other's index, with its own key
    guessed = {**forged, "mac": clusterauth.mac(b"", MSG_PART, forged)}
    runner.say(MSG_PART, guessed, "node-a")  # spoofing the victim's node without its key
    assert not list((tmp_path / "parts").iterdir())
    victim.say(MSG_PART, {"index": 0, "name": "part-w000-000000.parquet", "data": b"PAR1"})
    runner.say(MSG_PART, victim.signed(MSG_PART, {"index": 0, "name": "part-w000-000000.parquet", "data": b"X"})
               | {"seq": 1}, "node-a")  # a replayed sequence number
    assert (tmp_path / "parts" / "part-w000-000000.parquet").read_bytes() == b"PAR1"
    assert _rejections(control)["dropped"] == {MSG_PART: 3}


def test_master_relay_refuses_a_second_worker_for_a_taken_index_without_invalidating(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    Worker(runner, "node-a").join(), Worker(runner, "node-b").join()
    name, data = Worker(runner, "node-c").join()
    assert name == MSG_REFUSED and "all 2 worker index(es) were taken" in data["reason"]
    assert not list(control.glob("failed-*"))


def test_master_relay_drops_every_message_of_a_node_it_never_welcomed(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    messages: list[tuple[str, dict[str, object]]] = [
        (MSG_READY, {"index": 0, "rows": 9, "offset_s": 0, "rtt_s": 0}), (MSG_CPU, {"index": 0, "cpu": 99.0}),
        (MSG_DONE, {"index": 0, "failed": "made up"})]
    for msg_type, data in messages:
        runner.say(msg_type, clusterauth.signed(b"", msg_type, data, 1), "intruder")
    assert sorted(p.name for p in control.iterdir()) == [REJECTIONS_FILE]
    assert _rejections(control)["dropped"] == {MSG_READY: 1, MSG_CPU: 1, MSG_DONE: 1}


def test_master_relay_refuses_a_proven_worker_of_another_version_with_the_reason(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    name, data = Worker(runner, "old-box", version="rushhour 0.0.1, locust 1.0").join()
    assert name == MSG_REFUSED and 'old-box runs "rushhour 0.0.1, locust 1.0"' in data["reason"]
    assert "old-box" in (control / "failed-0").read_text()


def test_master_relay_sends_the_start_and_writes_down_a_lost_worker(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    worker = Worker(runner, "h0")
    worker.join()
    publish_start(control, 1234.5)
    runner.clients["h0"].state = STATE_MISSING
    gevent.sleep(0.2)
    start = next(data for name, data, to in runner.sent if name == MSG_START and to == "h0")
    assert start["t0"] == 1234.5 and clusterauth.verify(worker.key, MSG_START, start)
    assert "worker 0 on h0 stopped answering" in (control / "failed-0").read_text()
    assert (control / "done-0").exists()
    Worker(runner, "h1").join()
    del runner.clients["h1"]
    gevent.sleep(0.2)
    assert "worker 1 on h1 left the run (its Locust worker quit)" in (control / "failed-1").read_text()


def test_master_relay_starts_the_test_again_for_a_welcomed_worker_left_without_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Locust started (or tried to start) its test with a node that was then refused: the rightful
    worker that joined after it was given no users, and gets the test started again, once."""
    monkeypatch.setattr(master_relay, "IDLE_GRACE_S", 0.2)
    _, runner, _ = _relay(tmp_path)
    runner.state, runner.target_user_count = "ready", 16
    Worker(runner, "w0").join()
    runner.clients["w0"].state = STATE_IDLE
    gevent.sleep(0.1)
    assert runner.started == [], "started before the worker had its grace"
    gevent.sleep(0.5)
    assert runner.started == [(16, 16.0)]


def test_master_relay_leaves_workers_alone_while_locust_spawns_or_once_they_have_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(master_relay, "IDLE_GRACE_S", 0.1)
    _, runner, _ = _relay(tmp_path)
    runner.target_user_count = 16
    done = Worker(runner, "w0")
    done.join()
    Worker(runner, "w1").join()
    runner.clients["w0"].state = runner.clients["w1"].state = STATE_IDLE
    runner.state = "spawning"
    gevent.sleep(0.4)
    assert runner.started == [], "started while Locust was spawning"
    runner.state = "running"
    runner.clients["w1"].state = "running"
    done.say(MSG_DONE, {"index": 0, "failed": ""})
    gevent.sleep(0.4)
    assert runner.started == [], "started for a worker that had users or had finished"


def test_master_relay_remedy_gives_users_to_a_worker_real_locust_left_idle() -> None:
    """Against Locust itself (in its own process: it monkey-patches the interpreter): a headless
    start that found no worker leaves the worker that joins next with no users, in the state the
    relay looks for, and starting again with Locust's own target gives it its users."""
    script = Path(__file__).with_name("locust_late_worker.py")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True)
    seen = json.loads(done.stdout)
    assert seen["states"] == [STATE_IDLE, STATE_SPAWNING, STATE_MISSING]
    assert seen["idle"] == {"master": "ready", "worker": STATE_IDLE, "users": 0}
    assert seen["after"] == {"master": "running", "users": 8}


def test_a_real_master_survives_strangers_messages_and_keeps_its_worker() -> None:
    """Against Locust itself: an exception message that raises in Locust's handler, quit/client_stopped
    naming the welcomed worker, frames that are not messages, an unsigned rushhour message. The listener
    still answers, the worker is still there, and every one is counted."""
    script = Path(__file__).with_name("locust_hostile_senders.py")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["worker_kept"] and seen["listener_answers"]
    assert seen["dropped"] == {"exception": 2, "client_stopped": 1, "quit": 1, "heartbeat": 1, MSG_READY: 1,
                               master_relay.MALFORMED: 3}
