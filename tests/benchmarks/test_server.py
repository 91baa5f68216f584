"""`python -m benchmarks.server --quick`: runs end to end and writes the documented JSON.

Only the shape and sign of the numbers are checked; speed depends on the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.server import Goal

REPO = Path(__file__).resolve().parents[2]
GOAL_NAMES = [
    "served / raw throughput",
    "batched / unbatched throughput",
    "cache hit p50, server total_ms",
    "cache hit p99, server total_ms",
]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    command = [sys.executable, "-m", "benchmarks.server", "--quick", "--duration", "4", "--out", str(out)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, out, json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_bench_quick_writes_json_with_positive_numbers(quick_run: tuple[str, Path, dict[str, Any]]) -> None:
    stdout, out, result = quick_run
    assert f"wrote {out}" in stdout
    assert set(result) == {"settings", "throughput", "batching", "cache_hits", "goals"}
    for key in ("raw_rps", "served_rps", "ratio"):
        assert result["throughput"][key] > 0, key
    for key in ("batched_rps", "unbatched_rps", "ratio", "raw_batch1_rps"):
        assert result["batching"][key] > 0, key
    for load in (result["throughput"]["served"], result["batching"]["unbatched"]):
        assert load["completed"] > 0 and load["mean_batch_size"] >= 1
    hits = result["cache_hits"]
    assert hits["requests"] > 0 and hits["cached_share"] == 1.0
    for key in ("server_p50_ms", "server_p99_ms", "client_p50_ms", "client_p99_ms"):
        assert hits[key] > 0, key


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_bench_quick_reports_every_goal(quick_run: tuple[str, Path, dict[str, Any]]) -> None:
    stdout, _, result = quick_run
    goals = result["goals"]
    assert [g["name"] for g in goals] == GOAL_NAMES
    assert all(isinstance(g["met"], bool) and g["measured"] > 0 for g in goals)
    for name in GOAL_NAMES:
        assert any(line.startswith(name) and line.rstrip().endswith("met") for line in stdout.splitlines()), name


def test_goal_met_compares_in_the_goal_direction() -> None:
    assert Goal("ratio", 0.9, 0.85, True, "x").met
    assert not Goal("ratio", 0.8, 0.85, True, "x").met
    assert Goal("p50", 0.5, 1.0, False, "ms").met
    assert not Goal("p50", 1.0, 1.0, False, "ms").met
