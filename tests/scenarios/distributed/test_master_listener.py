"""One unauthenticated message cannot stop a drill across hosts.

The attack: anyone who reaches the master's port sends, once the drill runs, Locust's own
`exception` message with no data (it raises inside Locust's handler, which ended the master's
listener: the master heard nothing more, not the worker's results nor its end) and frames that
are no Locust message at all. The master drops and counts each; the drill completes with every
scheduled request sent once and answered, and `cluster_rejections` says what was dropped.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgpack  # type: ignore[import-untyped]
import pandas as pd
import pytest
import zmq

from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.generator.master_relay import MALFORMED
from tests.scenarios.distributed.cluster_drill import SCENARIO, generator_target, rushhour, start, wait_for_start

pytestmark = pytest.mark.slow
HOSTILE_FRAMES = (msgpack.packb(["exception", None, "stranger"]), b"\xc1 not msgpack", msgpack.packb(7))


def _send_as_stranger(port: int) -> None:
    """The frames, from a connection of its own, as Locust's client would send them (a DEALER socket)."""
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, b"stranger")
    sock.setsockopt(zmq.LINGER, 2000)
    sock.connect(f"tcp://127.0.0.1:{port}")
    for raw in HOSTILE_FRAMES:
        sock.send(raw)
    sock.close()
    context.term()


def test_an_exception_message_and_junk_frames_from_a_stranger_leave_the_drill_whole(tmp_path: Path) -> None:
    port = free_port()
    with generator_target() as target:
        scenario = SCENARIO.format(name="master-listener", duration="6s", seed=7, url=target)
        (tmp_path / "scenario.yaml").write_text(scenario, encoding="utf-8")
        master = start(rushhour("run", str(tmp_path / "scenario.yaml"), "--workers", "1", "--master-bind",
                                f"127.0.0.1:{port}", "--no-probe", "--out", str(tmp_path / "out")), tmp_path / "master.log")
        worker = start(rushhour("worker", "--master", f"127.0.0.1:{port}", "--name", "rightful", "--work-dir",
                                str(tmp_path / "w")), tmp_path / "worker.log")
        try:
            wait_for_start(tmp_path / "w", worker)
            _send_as_stranger(port)
            code = master.wait(timeout=150)
        finally:
            for proc in (worker, master):
                stop_process(proc, grace_s=5)
    assert code in (0, 3), (tmp_path / "master.log").read_text()  # 3: only if the shared machine lagged
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    assert not summary.get("aborted") and summary["requests"]["scheduled"] == summary["requests"]["completed"]
    requests = pd.read_parquet(out / "requests.parquet")
    assert len(requests) == len(pd.read_parquet(out / "schedule.parquet")) > 30
    assert requests["ok"].all() and (requests["fired"] == 1).all()
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    dropped = next(e for e in events if e["type"] == "cluster_rejections")["dropped"]
    assert dropped == {"exception": 1, MALFORMED: 2}
