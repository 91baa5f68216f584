"""The first-calibration benchmark reads each search it ran, with each step's SLO evidence, and
says where the search's time went."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks import first_calibration
from benchmarks.first_calibration import _searches, series_summary


def _step(index: int, verdict: str, warmup_s: float, measured_s: float, wall_s: float, settle_s: float) -> dict[str, object]:
    slo = {"name": "p99-free", "kind": "latency", "decision": "met" if verdict == "pass" else "open",
           "samples": 700 + index, "bad": 0, "pending": 0, "measured": 512.6, "design_effect": 1.0 + 5 * index}
    return {"index": index, "offered_rps": 40.0 + index, "verdict": verdict, "warmup_s": warmup_s,
            "measured_s": measured_s, "wall_s": wall_s, "settle_s": settle_s, "slos": [slo]}


def test_first_calibration_splits_a_search_time_into_its_parts(tmp_path: Path) -> None:
    steps = [_step(1, "pass", 5.0, 27.0, 34.3, 0.2), _step(2, "fail", 5.0, 24.0, 31.0, 0.1),
             _step(3, "fail", 5.0, 8.6, 15.2, 3.5), _step(4, "pass", 5.0, 31.0, 38.9, 5.8)]
    document = {"wall_s": 137.5, "settings": {"step_duration_s": 27.0},
                "conditions": [{"condition": "n-1", "probe": {"throughput_rps": 43.8}, "plan": None,
                                "summary": "41.6 req/s", "capacity_rps": 41.6, "steps": steps[::-1]}]}
    run = tmp_path / "capacity" / "runs" / "promo-day-n-1-probed"
    run.mkdir(parents=True)
    (run / "capacity.json").write_text(json.dumps(document))
    [search] = _searches(tmp_path)
    assert [step["index"] for step in search["steps"]] == [1, 2, 3, 4]
    split = search["time_split"]
    assert split == {"windows_s": 90.6, "warmups_s": 20.0, "generator_s": 8.8, "drain_s": 9.6, "other_s": 8.5}
    assert sum(split.values()) == pytest.approx(document["wall_s"])


def test_first_calibration_keeps_each_step_s_slo_evidence_with_its_design_effect(tmp_path: Path) -> None:
    steps = [_step(1, "pass", 5.0, 27.0, 34.3, 0.2), _step(2, "fail", 5.0, 24.0, 31.0, 0.1)]
    document = {"wall_s": 80.0, "settings": {"step_duration_s": 27.0},
                "conditions": [{"condition": "n-1", "probe": None, "plan": None, "summary": "41 req/s",
                                "capacity_rps": 41.0, "steps": steps}]}
    run = tmp_path / "capacity" / "runs" / "promo-day-n-1-probed"
    run.mkdir(parents=True)
    (run / "capacity.json").write_text(json.dumps(document))
    [search] = _searches(tmp_path)
    assert [step["slos"] for step in search["steps"]] == [
        [{"name": "p99-free", "decision": "met", "samples": 701, "bad": 0, "pending": 0, "design_effect": 6.0}],
        [{"name": "p99-free", "decision": "open", "samples": 702, "bad": 0, "pending": 0, "design_effect": 11.0}]]


def _run(wall_s: float, capacities: list[float]) -> dict[str, object]:
    """A first calibration's figures as `first_calibration` returns them, with one search per figure."""
    searches: list[dict[str, object]] = [{"search": f"s{i}", "probe": None, "steps": [], "step_duration_s": 30.0, "summary": f"{c} req/s",
                 "capacity_rps": c, "wall_s": wall_s - 5.0,
                 "time_split": {"windows_s": 0.0, "warmups_s": 0.0, "generator_s": 0.0, "drain_s": 0.0, "other_s": 0.0}}
                for i, c in enumerate(capacities)]
    return {"wall_s": wall_s, "exit_code": 0, "loadavg_1m_before": 0.5, "loadavg_1m_after": 2.0, "searches": searches}


def test_first_calibration_series_summary_gives_the_spread_and_the_runs_within_two_minutes() -> None:
    runs = [_run(131.0, [37.9]), _run(117.0, [40.2]), _run(180.0, [36.6]), _run(120.0, [90.0, 44.7])]
    summary = series_summary(runs)
    assert summary == {"runs": 4, "wall_s_min": 117.0, "wall_s_median": 125.5, "wall_s_max": 180.0,
                       "within_goal": 2, "goal_s": 120.0, "capacity_rps": [37.9, 40.2, 36.6, 44.7]}


def test_first_calibration_runs_a_series_and_writes_every_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walls = iter([150.0, 100.0, 125.0])
    monkeypatch.setattr(first_calibration, "first_calibration", lambda _scenario, _stale: _run(next(walls), [40.0]))
    out = tmp_path / "series.json"
    result = CliRunner().invoke(first_calibration.main, ["--runs", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "3 runs: 100-150 s, median 125 s, 1 of 3 within 120 s" in result.output
    document = json.loads(out.read_text())
    assert [run["wall_s"] for run in document["runs"]] == [150.0, 100.0, 125.0]
    assert document["summary"]["within_goal"] == 1 and document["command"].endswith("--runs 3")
