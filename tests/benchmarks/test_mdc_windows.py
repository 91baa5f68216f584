"""The per-step bench (benchmarks/mdc_windows.py): a step well below a queue's knee mostly passes
and one past it rarely does, under either rule."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks.mdc_whole import KNEE4
from benchmarks.mdc_windows import pass_rates


@pytest.mark.parametrize("rule", ["share", "percentile"])
def test_mdc_windows_steps_pass_below_the_knee_and_rarely_past_it(rule: str) -> None:
    row = pass_rates(dataclasses.replace(KNEE4, rule=rule), 30.0, 60, seed=3)
    shares = row["pass_share"]
    assert isinstance(shares, dict)
    assert shares["0.85"]["passed"] >= 0.4, row
    assert shares["1.05"]["ci95"][0] <= 0.05, row
