"""benchmarks.gate_trials: the night plan and the figures it reports, from nights of known outcome."""

from __future__ import annotations

import argparse
from dataclasses import asdict

import pytest

from benchmarks.gate_trials import Night, markdown, plan, summarise


def _night(index: int, kind: str, exit_code: int, mde: float | None = 1.2, wall_s: float = 100.0) -> Night:
    factor = {"same": 1.0, "slowed": 1.3, "small": 1.15}[kind]
    groups = [{"name": "paid", "ratio": factor, "ci_low": 1.0, "ci_high": 1.5, "ratio_text": "x1.30 [x1.00, x1.50]",
               "mde": mde, "pairs": 16, "verdict": "regression" if exit_code == 1 else "no_regression"}]
    return Night(index=index, kind=kind, factor=factor, exit_code=exit_code, wall_s=wall_s, load1_before=1.0,
                 neighbour_cores=0.8, verdict=None, groups=groups, results="")


def test_plan_holds_every_night_once_in_a_seeded_order() -> None:
    args = argparse.Namespace(nights=10, factor=1.3, small_nights=4, small_factor=1.15, seed=1)
    first, again = plan(args), plan(args)
    assert first == again and len(first) == 24
    assert first.count(("same", 1.0)) == 10 and first.count(("slowed", 1.3)) == 10 and first.count(("small", 1.15)) == 4
    assert first != plan(argparse.Namespace(**{**vars(args), "seed": 2}))
    assert first[:10] != [("same", 1.0)] * 10  # kinds are interleaved, not run in blocks


def test_summarise_counts_flags_inconclusive_nights_and_the_goal() -> None:
    nights = ([_night(i, "slowed", 1) for i in range(9)] + [_night(9, "slowed", 3, mde=None)]
              + [_night(10 + i, "same", 0, mde=1.4) for i in range(9)] + [_night(19, "same", 1)]
              + [_night(20, "small", 1), _night(21, "small", 0, wall_s=700.0)])
    summary = summarise(nights)
    assert summary["slowed"] == {"nights": 10, "flagged": 9, "rate": 0.9, "inconclusive_or_invalid": 1, "factor": 1.3}
    assert summary["same"]["flagged"] == 1 and summary["same"]["rate"] == pytest.approx(0.1)
    assert summary["small"]["flagged"] == 1 and summary["small"]["nights"] == 2
    assert summary["mde"]["min"] == 1.2 and summary["mde"]["max"] == 1.4
    assert summary["night_wall_s"]["max"] == 700.0 and not summary["goal_met"]  # one night over 10 minutes
    assert summarise(nights[:-1])["goal_met"]


def test_markdown_table_states_rates_and_one_row_per_night() -> None:
    nights = [_night(1, "same", 0), _night(2, "slowed", 1), _night(3, "small", 3, mde=None)]
    result = {"summary": summarise(nights), "config": {"factor": 1.3, "small_factor": 1.15, "cpu_count": 2},
              "nights": [asdict(n) for n in nights]}
    text = markdown(result)
    assert "| slowed nights flagged (every quality node ×1.3) | **1/1** (0 inconclusive or invalid) | ≥ 9/10 |" in text
    assert "| nights flagged at ×1.15 | **0/1** (1 inconclusive or invalid) | |" in text
    assert sum(line.startswith("| 2 | slowed ×1.3 | 1 |") for line in text.splitlines()) == 1
