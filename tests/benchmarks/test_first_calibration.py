"""The first-calibration benchmark reads each search it ran, with each step's SLO evidence, and
says where the search's time went."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.first_calibration import _searches


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
