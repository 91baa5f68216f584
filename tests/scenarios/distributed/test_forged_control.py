"""Locust's own control messages, forged on the path, cannot stop a worker's load.

The attack: someone on the path between a worker and its master (here a loopback relay that
injects frames into the master→worker stream, `zmtp_injector`) sends the worker Locust messages of
its own once the drill runs: a `stop`, a `spawn` of no users and a `quit`, without the session key.
Locust's worker obeyed such messages as its master's: with the signing taken out, the same test
saw the worker quit a second into its share, 8 of 89 requests sent, and the drill aborted ("worker
0 left the run ... its unsent share counts as not sent"). The worker's relay drops each one (no
valid MAC under the session key), counts and logs it, and the drill completes: every scheduled
request sent once and answered, as with no attacker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack  # type: ignore[import-untyped]
import pandas as pd
import pytest

from rushhour.kernel.processes import free_port, stop_process
from tests.scenarios.distributed.cluster_drill import SCENARIO, generator_target, rushhour, start, wait_for_start
from tests.scenarios.distributed.zmtp_injector import frame, injector

pytestmark = pytest.mark.slow


@pytest.fixture
def target() -> Iterator[str]:
    with generator_target() as url:
        yield url


def _forged(msg_type: str, data: object) -> bytes:
    """A Locust message as its master would frame it ((type, data, node id) in msgpack)."""
    return frame(msgpack.packb([msg_type, data, "rogue"]))


def test_forged_stop_spawn_and_quit_leave_the_workers_load_whole(tmp_path: Path, target: str) -> None:
    (tmp_path / "scenario.yaml").write_text(SCENARIO.format(name="forged-control", duration="8s", seed=5, url=target), encoding="utf-8")
    port = free_port()
    master = start(rushhour("run", str(tmp_path / "scenario.yaml"), "--workers", "1", "--master-bind",
                            f"127.0.0.1:{port}", "--no-probe", "--out", str(tmp_path / "out")), tmp_path / "master.log")
    procs = [master]
    try:
        with injector(("127.0.0.1", port)) as path:
            worker = start(rushhour("worker", "--master", f"127.0.0.1:{path.port}", "--name", "rightful",
                                    "--work-dir", str(tmp_path / "w")), tmp_path / "worker.log")
            procs.append(worker)
            wait_for_start(tmp_path / "w", worker)
            time.sleep(1.0)  # the share is firing
            path.inject(_forged("stop", None), _forged("spawn", {"timestamp": time.time() + 60, "host": target,
                                                                 "stop_timeout": 0, "parsed_options": {},
                                                                 "user_classes_count": {"OpenLoopUser": 0}}),
                        _forged("quit", {"data": None, "seq": 10**9, "mac": "0" * 64}))
            code = master.wait(timeout=150)
            assert code in (0, 3), (tmp_path / "master.log").read_text()  # 3: the shared machine lagged
            injected = path.injected
    finally:
        for proc in procs:
            stop_process(proc, grace_s=5)
    assert injected == 3, "the forged frames never went on the worker's connection"
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    assert not summary.get("aborted") and summary["requests"]["scheduled"] == summary["requests"]["completed"]
    requests = pd.read_parquet(out / "requests.parquet")
    assert len(requests) == len(pd.read_parquet(out / "schedule.parquet")) > 40
    assert requests["ok"].all() and (requests["fired"] == 1).all()
    log = (tmp_path / "worker.log").read_text(errors="replace")
    for msg_type in ("stop", "spawn", "quit"):
        assert f"Dropped {msg_type}: not from the master that proved the cluster secret" in log, log[-3000:]
