"""The noisy neighbour: bursts within their bounds, a bounded life, and stopped by PID."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.noisy_neighbour import NoisyNeighbour, busy_cores
from tests.support.processes import pid_alive


@pytest.mark.slow
def test_neighbour_bursts_within_bounds_and_ends_by_itself(tmp_path: Path) -> None:
    log = tmp_path / "bursts.jsonl"
    neighbour = NoisyNeighbour(cores=2, duration_s=2.0, seed=3, min_s=0.05, max_s=0.3, log=log).start()
    for proc in neighbour._procs:
        assert proc.wait(timeout=30) == 0  # the deadline ends it, not a signal
    bursts = [json.loads(line) for line in log.read_text().splitlines()]
    assert {burst["worker"] for burst in bursts} == {0, 1}
    assert all(0.0 < burst["end"] - burst["start"] <= 0.3 + 0.1 for burst in bursts)
    start = min(b["start"] for b in bursts)
    end = max(b["end"] for b in bursts)
    assert 0.2 < busy_cores(log, start, end) < 1.8  # bursts and gaps: neither idle nor both cores all along


@pytest.mark.slow
def test_neighbour_stop_ends_every_worker_by_pid(tmp_path: Path) -> None:
    with NoisyNeighbour(cores=2, duration_s=600.0, seed=1) as neighbour:
        pids = neighbour.pids
        assert len(pids) == 2 and all(pid_alive(pid) for pid in pids)
    assert not any(pid_alive(pid) for pid in pids)


def test_busy_cores_counts_overlap_with_the_window(tmp_path: Path) -> None:
    log = tmp_path / "bursts.jsonl"
    log.write_text("\n".join(json.dumps(b) for b in (
        {"worker": 0, "start": 0.0, "end": 4.0}, {"worker": 1, "start": 2.0, "end": 12.0})) + "\n")
    assert busy_cores(log, 0.0, 10.0) == pytest.approx((4.0 + 8.0) / 10.0)
    assert busy_cores(tmp_path / "missing.jsonl", 0.0, 10.0) == 0.0
