"""The trend interval against AR(1) windows of known slope: false fails at or under nominal."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.aux_truth import bounds, drift_fails
from rushhour.reports.estimate.trend import METHOD, trend_interval


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.5, 0.8])
def test_drift_false_fails_stay_at_two_and_a_half_percent_with_correlated_windows(rho: float) -> None:
    # Twelve windows (a short soak), slope at the allowance: the SLO fails when the whole 95%
    # interval is above it, stated 2.5%; before the correction 6-21% at AR(1) 0.3-0.8.
    found = drift_fails(rho, 12, 1_500, seed=int(100 * rho) + 1)
    assert bounds(found["hits"], found["reps"])[0] <= 0.025, found


def test_a_real_drift_is_still_found() -> None:
    # Independent windows, a slope four true standard deviations above the allowance: a plain
    # t interval would find it 97% of the time; the charged correlation costs some of that.
    found = drift_fails(0.0, 24, 400, seed=5, excess_sd=4.0)
    assert 0.6 < found["hits"] / found["reps"] < 1.0


def test_trend_names_its_method_and_effective_points() -> None:
    x = np.arange(12.0)
    line = trend_interval(x, 2.0 * x + np.sin(x), 0.95)
    assert line.method == METHOD and line.points == 12
    assert line.lag1 is not None and 0.0 <= line.lag1 < 1.0
    assert line.effective_points == pytest.approx(12 * (1 - line.lag1) / (1 + line.lag1))
    assert line.slope is not None and line.low is not None and line.high is not None
    assert line.slope == pytest.approx(2.0, abs=0.2) and line.low < line.slope < line.high


def test_trend_of_too_few_points_is_untrusted() -> None:
    line = trend_interval(np.array([0.0, 1.0]), np.array([1.0, 2.0]), 0.95)
    assert not line.trusted and line.low is None
