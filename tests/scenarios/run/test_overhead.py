"""The harness-overhead check against the null target: positive figures, stable, cached and reused."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from rushhour.scenarios.run import overhead
from rushhour.scenarios.run.nullserver import answer
from rushhour.scenarios.spec.model import load_scenario
from rushhour.scenarios.spec.plan import build_plan

SMOKE = Path(__file__).resolve().parents[3] / "scenarios" / "smoke.yaml"
STABLE_FACTOR = 3.0
"""Two checks on this shared machine agree on the lowest rung's P50 within this factor (or STABLE_MS)."""
STABLE_MS = 10.0


def test_the_null_target_answers_each_protocol_at_once() -> None:
    plain = answer(b'{"text": "hi"}')
    assert plain.startswith(b"HTTP/1.1 200 OK") and b'"choices"' in plain and b"event-stream" not in plain
    streamed = answer(b'{"stream": true, "messages": []}')
    assert b"text/event-stream" in streamed and streamed.endswith(b"data: [DONE]\n\n")


def test_the_rung_for_a_peak_is_the_lowest_at_or_above_it() -> None:
    steps = [{"rate_rps": r, "latency_ms": {"p99": r / 10}} for r in (50.0, 200.0, 500.0)]
    at_120, at_900 = overhead.at_peak({"steps": steps}, 120.0), overhead.at_peak({"steps": steps}, 900.0)
    assert at_120 is not None and at_120["rate_rps"] == 200.0
    assert at_900 is not None and at_900["rate_rps"] == 500.0
    assert overhead.at_peak({"steps": []}, 10.0) is None


def _mix() -> tuple[pd.DataFrame, dict[str, object], float]:
    plan = build_plan(load_scenario(SMOKE), source=str(SMOKE), base_dir=SMOKE.parent)
    return plan.schedule, plan.scenario.target.wire_dict(), plan.scenario.load.max_lag_p99_ms


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-b")  # its ladder is judged on the generator keeping its schedule: not beside six workers
def test_the_check_measures_positive_stable_figures_and_reuses_its_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    mix, target, limit = _mix()
    said: list[str] = []
    first = overhead.cached_or_measured(mix, target=target, lag_limit_ms=limit, languages=("en-de",), say=said.append)
    assert first["cached"] is False and any("measuring" in line for line in said)
    low = first["steps"][0]
    assert low["valid"] and low["requests"] == overhead.LADDER_RPS[0] * overhead.STEP_S
    assert 0 < low["latency_ms"]["p50"] <= low["latency_ms"]["p99"] <= low["latency_ms"]["p99_9"]
    assert first["max_valid_rps_per_process"] >= overhead.LADDER_RPS[0]
    written = json.loads(next(overhead.cache_dir().glob("*.json")).read_text())
    assert written["measured_at"] == first["measured_at"] and written["key"] == first["key"]

    monkeypatch.setattr(overhead, "measure_overhead", lambda *a, **k: pytest.fail("the cache was not reused"))
    again = overhead.cached_or_measured(mix, target=target, lag_limit_ms=limit, languages=("en-de",), say=said.append)
    assert again["cached"] is True and again["measured_at"] == first["measured_at"]
    monkeypatch.undo()

    second = overhead.measure_overhead(mix, target=target, lag_limit_ms=limit)["steps"][0]["latency_ms"]["p50"]
    a, b = sorted((low["latency_ms"]["p50"], second))
    assert b <= STABLE_FACTOR * a or b - a <= STABLE_MS


def test_a_stale_or_foreign_cache_entry_is_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    mix, target, limit = _mix()
    key, _ = overhead.overhead_key("rushhour", False)
    path = overhead.cache_dir() / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"steps": [], "measured_at": "2020-01-01T00:00:00+00:00", "lag_limit_ms": limit}))
    fresh = {"steps": [{"rate_rps": 50.0, "latency_ms": {"p99": 1.0}}], "max_valid_rps_per_process": 50.0}
    monkeypatch.setattr(overhead, "measure_overhead", lambda *a, **k: dict(fresh))
    record = overhead.cached_or_measured(mix, target=target, lag_limit_ms=limit, languages=("en-de",), say=print)
    assert record["cached"] is False and json.loads(path.read_text())["steps"] == fresh["steps"]


def _seed_cache(limit: float) -> dict[str, object]:
    """A fresh cached record with known figures, as a check on this machine would leave it."""
    key, parts = overhead.overhead_key("rushhour", False)
    steps = [{"rate_rps": rate, "valid": True, "latency_ms": {"p50": 1.5, "p99": 4.25, "p99_9": 6.0}, "ttft_ms": None}
             for rate in overhead.LADDER_RPS]
    record = {"key": key, "made_of": parts, "steps": steps, "max_valid_rps_per_process": 3000.0,
              "lag_limit_ms": limit, "measured_at": datetime.now(UTC).isoformat(timespec="seconds")}
    overhead.cache_dir().mkdir(parents=True, exist_ok=True)
    (overhead.cache_dir() / f"{key}.json").write_text(json.dumps(record))
    return record


@pytest.mark.slow
def test_a_drill_reports_the_cached_overhead_and_a_dry_run_never_checks(tmp_path: Path, drill_process: list,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(overhead.SKIP_ENV)
    record = _seed_cache(_mix()[2])
    dry = subprocess.run([sys.executable, "-m", "rushhour.scenarios.cli.main", "run", "smoke", "--dry-run"],
                         capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0 and "overhead" not in dry.stdout + dry.stderr
    out = tmp_path / "drill"
    proc = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.cli.main", "run", "smoke", "--out", str(out),
                             "--duration", "5s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    drill_process.append(proc)
    output = proc.communicate(timeout=240)[0].decode()
    assert "harness overhead: P99 4.25 ms at 50.0 req/s" in output, output
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    event = next(e for e in events if e["type"] == "harness_overhead")
    assert event["cached"] is True and event["measured_at"] == record["measured_at"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["harness_overhead"]["latency_ms"]["p99"] == 4.25
    assert "P99 4.2 ms" in (out / "report.md").read_text() or "P99 4.3 ms" in (out / "report.md").read_text()
