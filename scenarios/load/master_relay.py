"""The Locust master's side of a drill across hosts: the control files, relayed over Locust's channel.

On one machine the runner and the Locust workers share a control folder (`scenarios.load.worker`).
Remote workers cannot write into the master's folder, so the Locust master process relays:
whatever a worker says over Locust's own message channel (`runner.send_message` /
`register_message`) becomes the same marker or part file a local worker would have written, and
the `start` file the runner publishes goes out to every worker as a message. The runner's
`LoadSession` therefore reads one folder whatever the topology, and the results are identical in
form. A worker Locust reports missing (no heartbeat) before it said `done` is written down as
failed with the reason, so its unsent share counts as not sent and the run is invalid.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

import gevent

from scenarios.load.clocksync import software_version
from scenarios.load.worker import START_FILE, WorkerConfig

MSG_PING, MSG_PONG = "rh_ping", "rh_pong"
MSG_HELLO, MSG_CONFIG, MSG_REFUSED = "rh_hello", "rh_config", "rh_refused"
MSG_READY, MSG_START, MSG_PART, MSG_DONE = "rh_ready", "rh_start", "rh_part", "rh_done"
MSG_CPU = "rh_cpu"
WATCH_S = 0.05
STATE_MISSING = "missing"
"""`locust.runners.STATE_MISSING`, spelled out: importing Locust here would monkey-patch the importer."""
PART_NAME = re.compile(r"^part-w\d{3}-\d{6}\.parquet$")
log = logging.getLogger(__name__)


class MasterRelay:
    """Turns the workers' messages into control and part files, and the start file into a message."""

    def __init__(self, runner: Any, config: WorkerConfig) -> None:
        self._runner = runner
        self._config = config
        self._control = Path(config.control_dir)
        self._parts = Path(config.parts_dir)
        self._schedule = Path(config.schedule).read_bytes()
        self._nodes: dict[int, str] = {}
        self._hosts: dict[int, str] = {}
        self._closed: set[int] = set()

    def install(self) -> MasterRelay:
        handlers = {MSG_PING: self._ping, MSG_HELLO: self._hello, MSG_READY: self._ready,
                    MSG_PART: self._part, MSG_DONE: self._done, MSG_CPU: self._cpu}
        for name, handler in handlers.items():
            self._runner.register_message(name, handler)
        gevent.spawn(self._watch)
        return self

    def _ping(self, environment: Any, msg: Any) -> None:
        self._runner.send_message(MSG_PONG, {"sent": msg.data["sent"], "master": time.time()}, msg.node_id)

    def _hello(self, environment: Any, msg: Any) -> None:
        index = self._runner.get_worker_index(msg.node_id)
        reason = refusal(msg.data, index, self._config.workers)
        if reason is not None:
            log.error("%s", reason)
            self._runner.send_message(MSG_REFUSED, {"reason": reason}, msg.node_id)
            self._mark(f"failed-{index}", reason)
            return
        self._nodes[index] = msg.node_id
        self._hosts[index] = str(msg.data.get("host", "?"))
        self._runner.send_message(MSG_CONFIG, {"index": index, "config": dict(self._config.__dict__),
                                               "schedule": self._schedule}, msg.node_id)

    def _ready(self, environment: Any, msg: Any) -> None:
        index = int(msg.data["index"])
        clock = {"index": index, "host": self._hosts.get(index, "?"), "rows": int(msg.data["rows"]),
                 "clock_offset_ms": round(1000.0 * float(msg.data["offset_s"]), 3),
                 "clock_rtt_ms": round(1000.0 * float(msg.data["rtt_s"]), 3)}
        self._mark(f"clock-{index}.json", json.dumps(clock))
        self._mark(f"ready-{index}", str(clock["rows"]))

    def _part(self, environment: Any, msg: Any) -> None:
        name = str(msg.data["name"])
        if not PART_NAME.match(name) or int(msg.data["index"]) in self._closed:
            log.warning("Ignored part %r from worker %s.", name, msg.node_id)
            return
        tmp = self._parts / f".{name}.tmp"
        tmp.write_bytes(msg.data["data"])
        os.replace(tmp, self._parts / name)

    def _cpu(self, environment: Any, msg: Any) -> None:
        """A worker's own CPU (% of one core): the runner judges the generator by its busiest host."""
        self._mark(f"cpu-{int(msg.data['index'])}", f"{float(msg.data['cpu']):.1f}")

    def _done(self, environment: Any, msg: Any) -> None:
        index = int(msg.data["index"])
        if msg.data.get("failed"):
            self._mark(f"failed-{index}", f"worker {index} on {self._hosts.get(index, '?')}: {msg.data['failed']}")
        self._close(index)

    def _close(self, index: int) -> None:
        if index not in self._closed:
            self._closed.add(index)
            self._mark(f"done-{index}", "")

    def _mark(self, name: str, text: str) -> None:
        tmp = self._control / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self._control / name)

    def _watch(self) -> None:
        """Send the start time once the runner publishes it; write down workers that went missing."""
        started = False
        while True:
            gevent.sleep(WATCH_S)
            start = self._control / START_FILE
            if not started and start.exists():
                self._runner.send_message(MSG_START, {"t0": float(start.read_text(encoding="utf-8"))})
                started = True
            for index in lost_workers(self._runner, self._nodes, self._closed):
                reason = (f"worker {index} on {self._hosts.get(index, '?')} stopped answering (no Locust heartbeat) "
                          "before it finished; its unsent share counts as not sent")
                log.error("%s", reason)
                self._mark(f"failed-{index}", reason)
                self._close(index)


def refusal(hello: dict[str, Any], index: int, expected: int) -> str | None:
    """Why a joining worker is turned away (None: welcome)."""
    theirs, ours = str(hello.get("version", "")), software_version()
    host = hello.get("host", "?")
    if theirs != ours:
        return (f'The worker on {host} runs "{theirs}" but the master runs "{ours}"; '
                "install the same version on every host.")
    if index >= expected:
        return (f"The worker on {host} got index {index}, but the drill expects {expected} worker(s) "
                f"(indexes 0 to {expected - 1}); start it again for the next drill.")
    return None


def lost_workers(runner: Any, nodes: dict[int, str], closed: set[int]) -> list[int]:
    """Indexes of welcomed workers Locust no longer counts (missing heartbeat or gone), not yet done."""
    lost = []
    for index, node_id in nodes.items():
        client = runner.clients.get(node_id)
        if index not in closed and (client is None or client.state == STATE_MISSING):
            lost.append(index)
    return lost
