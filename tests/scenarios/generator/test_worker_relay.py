"""A worker trusts nothing its master says until the master proved the cluster secret: a rogue
master (no secret, or another) gets no proof, no credential and no request; a replayed master
message is dropped. Played against the real `MasterRelay` through an in-process channel."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import pandas as pd
import pytest

from rushhour.scenarios.generator import clusterauth
from rushhour.scenarios.generator.master_relay import (
    MSG_CHALLENGE,
    MSG_CONFIG,
    MSG_HELLO,
    MSG_PROVE,
    MSG_START,
    MasterRelay,
)
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import START_FILE, publish_start
from rushhour.scenarios.generator.worker_local import WorkerLocal
from rushhour.scenarios.generator.worker_relay import STATUS_FILE, WorkerRefused, WorkerRelay

SECRET = "the-rightful-cluster-secret-01"
NODE = "worker-node-1"


@dataclass
class Msg:
    data: Any
    node_id: str


@dataclass
class Environment:
    host: str = "http://127.0.0.1:1"


@dataclass
class MasterSide:
    """Just what `MasterRelay` uses of Locust's MasterRunner; what it sends goes to the worker's handlers."""

    worker: WorkerSide | None = None
    handlers: dict[str, Any] = field(default_factory=dict)
    clients: dict[str, Any] = field(default_factory=dict)
    environment: Environment = field(default_factory=Environment)
    state: str = "running"
    target_user_count: int = 0

    def register_message(self, name: str, handler: Any) -> None:
        self.handlers[name] = handler

    def send_message(self, name: str, data: Any = None, client_id: str | None = None) -> None:
        assert self.worker is not None
        self.worker.hear(name, data)


@dataclass
class WorkerSide:
    """Just what `WorkerRelay` uses of Locust's WorkerRunner; what it sends goes to `master` (a handler table)."""

    master: dict[str, Any] = field(default_factory=dict)
    handlers: dict[str, Any] = field(default_factory=dict)
    heard: list[tuple[str, Any]] = field(default_factory=list)
    said: list[tuple[str, Any]] = field(default_factory=list)
    worker_index: int = 0
    client_id: str = NODE

    def register_message(self, name: str, handler: Any) -> None:
        self.handlers[name] = handler

    def send_message(self, name: str, data: Any = None) -> None:
        self.said.append((name, data))
        if name in self.master:
            self.master[name](environment=None, msg=Msg(data, NODE))

    def hear(self, name: str, data: Any) -> None:
        self.heard.append((name, data))
        self.handlers[name](environment=None, msg=Msg(data, "master"))


def _settings(tmp_path: Path) -> LoadSettings:
    pd.DataFrame({"offset_s": [0.0]}).to_parquet(tmp_path / "schedule.parquet")
    for folder in ("control", "parts"):
        (tmp_path / folder).mkdir()
    return LoadSettings(host="http://127.0.0.1:1", schedule_path=tmp_path / "schedule.parquet", work_dir=tmp_path,
                        duration_s=1.0, remote_workers=1, timeout_margin_s=1.0)


def _worker(tmp_path: Path, side: WorkerSide, stops: list[int], **local: Any) -> WorkerRelay:
    work = tmp_path / "worker"
    work.mkdir()
    return WorkerRelay(side, work, "w", secret=SECRET, local=WorkerLocal(**local),
                       stop=lambda: stops.append(1)).install()


@pytest.mark.parametrize("rogue_secret", [None, "a-secret-that-is-not-ours-0"])
def test_a_rogue_master_gets_no_proof_and_its_configuration_is_never_taken(
    tmp_path: Path, rogue_secret: str | None,
) -> None:
    """The rogue answers the hello with a challenge it cannot prove, then pushes a configuration that names
    its own host: the worker proves nothing, takes nothing, loads nothing, and quits saying why."""
    side, stops = WorkerSide(), list[int]()
    settings = _settings(tmp_path)
    rogue_config = {"index": 0, "host": "http://203.0.113.9:80", "config": settings.to_wire(),
                    "schedule": settings.schedule_path.read_bytes()}

    def rogue_hello(environment: Any, msg: Msg) -> None:
        nonce = clusterauth.new_nonce()
        proof = clusterauth.master_proof(rogue_secret, msg.data["nonce"], nonce, NODE) if rogue_secret else "x" * 64
        side.hear(MSG_CHALLENGE, {"nonce": nonce, "proof": proof})
        side.hear(MSG_CONFIG, clusterauth.signed(b"", MSG_CONFIG, rogue_config, 1))

    side.master[MSG_HELLO] = rogue_hello
    relay = _worker(tmp_path, side, stops, auth={"scheme": "bearer", "env": "TOKEN", "file": None, "header": None},
                    allow_remote=True)
    with pytest.raises(WorkerRefused, match="the master could not prove it holds this worker's secret"):
        relay.joined(timeout_s=5)
    proofs = [data for name, data in side.said if name == MSG_PROVE]
    assert proofs == [{"proof": "", "host": "w"}], "the worker proved the secret to a master that did not"
    assert relay.dropped == 1, "the rogue's configuration was not dropped"
    assert not list((tmp_path / "worker").glob("run-*")), "the rogue's schedule was written"
    assert "did not match" in (tmp_path / "worker" / STATUS_FILE).read_text()
    gevent.sleep(0.6)
    assert stops == [1]


def test_a_replayed_or_unsigned_master_message_is_dropped_after_a_rightful_join(tmp_path: Path) -> None:
    side, stops = WorkerSide(), list[int]()
    master = MasterSide(worker=side)
    MasterRelay(master, _settings(tmp_path), SECRET).install()
    side.master = master.handlers
    master.clients[NODE] = type("Client", (), {"state": "running"})()
    relay = _worker(tmp_path, side, stops)
    joined = relay.joined(timeout_s=10)
    assert joined.index == 0 and joined.host == "http://127.0.0.1:1"
    config = next(data for name, data in side.heard if name == MSG_CONFIG)
    side.hear(MSG_CONFIG, config)  # the same configuration again: a replay
    publish_start(tmp_path / "control", 1000.0)
    start_file = joined.settings.control_dir / START_FILE
    for _ in range(100):
        if start_file.exists():
            break
        gevent.sleep(0.05)
    first = start_file.read_text()
    start = next(data for name, data in side.heard if name == MSG_START)
    side.hear(MSG_START, {**start, "t0": 9.0})  # tampered: the MAC no longer fits
    side.hear(MSG_START, start)  # replayed: a sequence number already seen
    side.hear(MSG_START, {"t0": 9.0})  # unsigned
    assert start_file.read_text() == first and relay.dropped == 4 and stops == []
    (joined.settings.control_dir / f"done-{joined.index}").write_text("")  # lets the relay's shipping end
    gevent.sleep(0.5)
    assert (tmp_path / "control" / "done-0").exists(), "the rightful master stopped hearing the worker"
