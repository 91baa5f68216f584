"""The failure share, judged on its own: does the current run fail significantly more often?

A percentile cannot see every regression into errors: once more than 1% of a group fails, its
P99 is a failure in both runs and the ratio says nothing. So the gate also compares the share of
attempted requests that failed, one-sided (current share greater than the baseline runs'), at
the same per-group error rate as the latency test, and asks for an increase of at least
MIN_FAILURE_SHARE_CHANGE, so a significant but negligible rise (0.1% to 0.3% on a large run) is
not a regression. Failures come in bursts (a node restarting fails every request for seconds),
so the test is on blocks of time, not single requests, and with several baseline runs the
share's own run-to-run spread is charged too (rushhour.reports.estimate.blockshare).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rushhour.reports.estimate.blockshare import share_increase

__all__ = ["MIN_FAILURE_SHARE_CHANGE", "FailureShare", "judge_failures"]

MIN_FAILURE_SHARE_CHANGE = 0.005  # half a percentage point of attempted requests


@dataclass(frozen=True)
class FailureShare:
    """Both shares, the test's p-value, whether the rise counts as a regression, and what the
    test stood on: its method, the design effect charged and the effective requests per side."""

    baseline: float | None
    current: float | None
    p_value: float | None
    regression: bool
    method: str | None = None
    design_effect: float | None = None
    effective_current: float | None = None
    effective_baseline: float | None = None


def judge_failures(current: np.ndarray, baselines: list[np.ndarray], *, alpha: float) -> FailureShare:
    """Compare failure shares; each array is one run's attempted requests in time order, True
    where the request failed. None shares when a side attempted nothing."""
    baselines = [run for run in baselines if run.size]
    if not current.size or not baselines:
        return FailureShare(None, None, None, False)
    base = float(np.concatenate(baselines).mean())
    cur = float(current.mean())
    test = share_increase(current, baselines, 1.0 - 2.0 * alpha)
    regression = test.p_value < alpha and cur - base >= MIN_FAILURE_SHARE_CHANGE
    return FailureShare(base, cur, test.p_value, bool(regression), test.method, test.design_effect,
                        test.effective_current, test.effective_baseline)
