"""The process ledger: every process of the run written down, chaos runs' own children left out."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rushhour.kernel.processes import stop_process
from rushhour.scenarios.run.audit.ledger import CHAOS_MARK, ProcessLedger, survivors

CHILD = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        stop_process(proc, grace_s=2, group=True)


def _start(started: list[subprocess.Popen[bytes]], *extra: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *extra], start_new_session=True)
    started.append(proc)
    return proc


@pytest.mark.slow
def test_ledger_records_children_and_their_descendants_but_not_a_chaos_runs_own(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    import time

    server = _start(started)
    chaos = _start(started, CHAOS_MARK)
    time.sleep(1.0)  # both have started their own child by now
    ledger = ProcessLedger(tmp_path / "processes.json")
    ledger.observe()
    pids = {t.pid for t in ledger.tracked}
    assert server.pid in pids and chaos.pid in pids
    assert len(pids) == 3  # the server's child is ours to audit; the chaos run's child is not
    written = json.loads((tmp_path / "processes.json").read_text())["processes"]
    assert {p["pid"] for p in written} == pids
    assert {t.pid for t in survivors(tmp_path / "processes.json") or []} == pids
    for proc in started:
        stop_process(proc, grace_s=2, group=True)
    deadline = time.monotonic() + 10
    while ledger.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ledger.alive() == [] and survivors(tmp_path / "processes.json") == []
    assert survivors(tmp_path / "missing.json") is None
