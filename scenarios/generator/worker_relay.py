"""A remote Locust worker's side of a drill across hosts (`rushhour worker --master HOST:PORT`).

It cannot see the master's folder, so it keeps a private one with the same layout and the same
`run_worker` fires from it: on joining it measures the clock offset to the master, says hello
with its version (a different version is refused), receives the run's settings and the whole
schedule (so its share is cut exactly as `--processes` cuts it), and then relays: its `ready`
marker goes to the master as a message, the master's start time comes back and is written,
converted to this host's clock, as the local `start` file, and every finished part file is
shipped over Locust's message channel and deleted here, followed by `done` once the last is out.

Joining is a challenge both ways (`rushhour.scenarios.generator.clusterauth`): the worker's hello carries
its own nonce, and it answers the master's challenge only once the master has proved, over that
nonce, that it holds the cluster secret; a master that cannot is refused before it learns
anything or hands over any setting. Every message after that, in both directions, carries a
sequence number and a MAC; a master message with a wrong MAC or a sequence number already seen
(a replay) is dropped and logged, Locust's own control messages (`spawn`, `stop`, `quit`, ...)
included (`rushhour.scenarios.generator.control_auth`). The settings that come back pass through
`rushhour.scenarios.generator.worker_local`: the target host must pass this worker's own loopback guard,
and the credential and CA bundle are this worker's own (sent only to a host this worker pinned).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gevent
import psutil
from gevent.event import AsyncResult

from rushhour.kernel.atomic import write_bytes_atomic, write_text_atomic
from rushhour.kernel.contract import SCHEDULE_FILE
from rushhour.scenarios.generator import clusterauth, control_auth
from rushhour.scenarios.generator.clocksync import (
    ClockSample,
    ClockSync,
    estimate_offset,
    software_version,
)
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
    MasterRelay,
)
from rushhour.scenarios.generator.partwriter import list_parts
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import publish_start
from rushhour.scenarios.generator.worker_local import WorkerLocal

ENV_DISTRIBUTED = "RUSHHOUR_DISTRIBUTED"
ENV_REMOTE_WORK = "RUSHHOUR_REMOTE_WORK"
ENV_WORKER_NAME = "RUSHHOUR_WORKER_NAME"
STATUS_FILE = "refused"
JOINED_FILE = "joined"
PINGS = 8
REPLY_WAIT_S = 10.0
CONFIG_WAIT_S = 300.0
SHIP_S = 0.2
CPU_EVERY_S = 1.0
MASTER_UNPROVEN = ("the cluster secret did not match: the master could not prove it holds this worker's secret "
                   f"(give both the same {clusterauth.SECRET_ENV} or --secret-file, and check --master names "
                   "your drill's master); nothing was taken from it")
log = logging.getLogger(__name__)


def _terminate_self() -> None:
    """End this Locust worker (it quits cleanly on SIGTERM)."""
    os.kill(os.getpid(), signal.SIGTERM)


class WorkerRefused(RuntimeError):
    """The master turned this worker away (wrong secret, another version, no index free), or this
    worker refused what the master asked (a target its guard does not allow)."""


@dataclass(frozen=True)
class Joined:
    """What joining gave this worker: its index, settings with local paths, the clock offset."""

    index: int
    settings: LoadSettings
    clock: ClockSync
    host: str
    key: bytes


class WorkerRelay:
    """Joins the master, then relays this worker's control and part files over Locust's channel."""

    def __init__(self, runner: Any, work_dir: Path, name: str, *, secret: str | None = None,
                 local: WorkerLocal | None = None, stop: Callable[[], None] = _terminate_self) -> None:
        self._runner = runner
        self._work = work_dir
        self._name = name
        self._secret = secret
        self._local = local or WorkerLocal()
        self._stop = stop
        self._seq = 0
        self._heard = 0
        self._key: bytes | None = None
        self._index = -1
        self.dropped = 0
        self._challenge: AsyncResult = AsyncResult()
        self._pong: AsyncResult = AsyncResult()
        self._config: AsyncResult = AsyncResult()
        self._joined: AsyncResult = AsyncResult()

    def install(self) -> WorkerRelay:
        handlers = {MSG_PONG: self._on_pong, MSG_CHALLENGE: self._on_challenge, MSG_CONFIG: self._on_config,
                    MSG_REFUSED: self._on_refused, MSG_START: self._on_start}
        for msg_type, handler in handlers.items():
            self._runner.register_message(msg_type, handler)
        control_auth.guard_control(self._runner, self._heard_from_master)  # Locust's spawn, stop, quit ...
        gevent.spawn(self._join)
        return self

    def joined(self, timeout_s: float = CONFIG_WAIT_S) -> Joined:
        """Block (cooperatively) until joined; raises WorkerRefused or TimeoutError."""
        result: Joined = self._joined.get(timeout=timeout_s)
        return result

    def _join(self) -> None:
        try:
            while self._runner.worker_index < 0:  # Locust's ack (with the index) not in yet
                gevent.sleep(0.05)
            self._authenticate()
            data = self._config.get(timeout=CONFIG_WAIT_S)
            self._index = int(data["index"])
            clock = estimate_offset([self._ping() for _ in range(PINGS)])
            assert self._key is not None
            joined = Joined(self._index, self._local_settings(data), clock, str(data.get("host", "")), self._key)
        except WorkerRefused as exc:
            self._quit(exc)
            return
        except Exception as exc:  # noqa: BLE001 - handed to whoever waits on joined()
            self._joined.set_exception(exc)
            return
        reason = self._local.refusal(joined.host) or self._local.schedule_refusal(str(joined.settings.schedule_path))
        if reason is not None:
            self._send(MSG_DONE, {"index": joined.index, "failed": f"refused by the worker: {reason}"})
            self._quit(WorkerRefused(reason))
            return
        write_text_atomic(f"{joined.index}\n", self._work / JOINED_FILE, sync=False)
        self._joined.set(joined)
        gevent.spawn(self._ship, joined)

    def _authenticate(self) -> None:
        """Hello with this worker's nonce; answer the challenge only when the master proved the secret over
        it (else tell the master the secret did not match, proving nothing, and raise WorkerRefused)."""
        ours = clusterauth.new_nonce()
        self._runner.send_message(MSG_HELLO, {"host": self._name, "nonce": ours})
        challenge = self._challenge.get(timeout=REPLY_WAIT_S)
        nonce, node = str(challenge.get("nonce", "")), str(self._runner.client_id)
        if not clusterauth.same(challenge.get("proof"), clusterauth.master_proof(self._secret, ours, nonce, node)):
            self._runner.send_message(MSG_PROVE, {"proof": "", "host": self._name})
            raise WorkerRefused(MASTER_UNPROVEN)
        self._key = clusterauth.session_key(self._secret, nonce, node, ours)
        self._runner.send_message(MSG_PROVE, {"proof": clusterauth.proof(self._secret, nonce, node),
                                              "version": software_version(), "host": self._name})

    def _send(self, msg_type: str, data: dict[str, object]) -> None:
        """One message to the master, with its sequence number and MAC."""
        assert self._key is not None
        self._seq += 1
        self._runner.send_message(msg_type, clusterauth.signed(self._key, msg_type, data, self._seq))

    def _heard_from_master(self, msg_type: str, msg: Any) -> dict[str, Any] | None:
        """The message's data when the master that proved the secret sent it, and never before (its
        MAC under the session key, a sequence number above every one seen); None, logged, otherwise."""
        data = msg.data if isinstance(msg.data, dict) else {}
        seq = data.get(clusterauth.SEQ_FIELD)
        if self._key is None or not clusterauth.verify(self._key, msg_type, data):
            why = "not from the master that proved the cluster secret"
        elif not isinstance(seq, int) or seq <= self._heard:
            why = "a sequence number already seen (replayed)"
        else:
            self._heard = seq
            return data
        self.dropped += 1
        log.warning("Dropped %s: %s.", msg_type, why)
        return None

    def _ping(self) -> ClockSample:
        self._pong = AsyncResult()
        sent = time.time()
        self._send(MSG_PING, {"index": self._index, "sent": sent})
        master, back = self._pong.get(timeout=REPLY_WAIT_S)
        return ClockSample(sent=sent, master=master, back=back)

    def _on_pong(self, environment: Any, msg: Any) -> None:
        data = self._heard_from_master(MSG_PONG, msg)
        if data is not None:
            self._pong.set((float(data["master"]), time.time()))

    def _on_challenge(self, environment: Any, msg: Any) -> None:
        if not self._challenge.ready():  # the first one counts; it is checked in _authenticate
            self._challenge.set(msg.data if isinstance(msg.data, dict) else {})

    def _on_config(self, environment: Any, msg: Any) -> None:
        data = self._heard_from_master(MSG_CONFIG, msg)
        if data is not None and not self._config.ready():
            self._config.set(data)

    def _on_refused(self, environment: Any, msg: Any) -> None:
        data = self._heard_from_master(MSG_REFUSED, msg)
        if data is not None:
            refused = self._quit(WorkerRefused(str(data["reason"])))
            if not self._config.ready():
                self._config.set_exception(refused)

    def _quit(self, refused: WorkerRefused) -> WorkerRefused:
        """Say why in the status file, and end this Locust worker."""
        write_text_atomic(str(refused), self._work / STATUS_FILE, sync=False)
        if not self._joined.ready():
            self._joined.set_exception(refused)
        gevent.spawn_later(0.5, self._stop)
        return refused

    def _on_start(self, environment: Any, msg: Any) -> None:
        data = self._heard_from_master(MSG_START, msg)
        if data is None:
            return
        joined: Joined = self._joined.get(timeout=REPLY_WAIT_S)
        publish_start(joined.settings.control_dir, joined.clock.to_worker_clock(float(data["t0"])))

    def _local_settings(self, data: dict[str, Any]) -> LoadSettings:
        """The master's settings with this worker's own folder, credential and CA bundle,
        validated on arrival (SettingsError names a malformed field)."""
        run = self._work / f"run-{int(time.time() * 1000)}"
        sent = dict(data["config"])
        local = {"schedule_path": str(run / SCHEDULE_FILE), "work_dir": str(run),
                 "target": self._local.target(sent.get("target"))}  # never the master's files or credentials
        settings = LoadSettings.arrive({**sent, **local}, source="the master's load settings")
        for folder in (settings.control_dir, settings.parts_dir):
            folder.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(data["schedule"], settings.schedule_path, sync=False)
        return settings

    def _ship(self, joined: Joined) -> None:
        """Relay ready, parts and done until the local worker has finished its share."""
        control, index = joined.settings.control_dir, joined.index
        told_ready, me, last_cpu = False, psutil.Process(), time.monotonic()
        me.cpu_percent(interval=None)
        while True:
            gevent.sleep(SHIP_S)
            if time.monotonic() - last_cpu >= CPU_EVERY_S:
                self._send(MSG_CPU, {"index": index, "cpu": me.cpu_percent(interval=None)})
                last_cpu = time.monotonic()
            ready = control / f"ready-{index}"
            if not told_ready and ready.exists():
                self._send(MSG_READY, {"index": index, "rows": int(ready.read_text() or 0),
                                               "offset_s": joined.clock.offset_s, "rtt_s": joined.clock.rtt_s})
                told_ready = True
            finished = (control / f"done-{index}").exists()
            self._ship_parts(joined)
            if finished:
                failed = control / f"failed-{index}"
                self._send(MSG_DONE, {"index": index, "failed": failed.read_text() if failed.exists() else ""})
                return

    def _ship_parts(self, joined: Joined) -> None:
        for path in list_parts(joined.settings.parts_dir):
            self._send(MSG_PART, {"index": joined.index, "name": path.name, "data": path.read_bytes()})
            path.unlink()


def install_relay(runner: Any) -> MasterRelay | WorkerRelay | None:
    """The relay this Locust process needs in a drill across hosts (None on one machine)."""
    from locust.runners import MasterRunner, WorkerRunner

    secret = clusterauth.read_secret()
    if isinstance(runner, MasterRunner) and os.environ.get(ENV_DISTRIBUTED):
        return MasterRelay(runner, LoadSettings.from_env(), secret).install()
    work = os.environ.get(ENV_REMOTE_WORK)
    if isinstance(runner, WorkerRunner) and work:
        name = os.environ.get(ENV_WORKER_NAME) or socket.gethostname()
        return WorkerRelay(runner, Path(work), name, secret=secret, local=WorkerLocal.from_env()).install()
    return None

