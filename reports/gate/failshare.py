"""The failure share, judged on its own: does the current run fail significantly more often?

A percentile cannot see every regression into errors: once more than 1% of a group fails, its
P99 is a failure in both runs and the ratio says nothing. So the gate also compares the share of
attempted requests that failed: a one-sided Fisher exact test (current share greater than the
baseline runs' pooled share) at the same per-group error rate as the latency test, and an
increase of at least MIN_FAILURE_SHARE_CHANGE, so a significant but negligible rise (0.1% to
0.3% on a large run) is not a regression. Pooling treats the baseline runs' failures as one
sample: a machine whose failure share itself moves from night to night is not modelled here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MIN_FAILURE_SHARE_CHANGE", "FailureShare", "judge_failures"]

MIN_FAILURE_SHARE_CHANGE = 0.005  # half a percentage point of attempted requests


@dataclass(frozen=True)
class FailureShare:
    """Both shares, the test's p-value, and whether the rise counts as a regression."""

    baseline: float | None
    current: float | None
    p_value: float | None
    regression: bool


def judge_failures(failed_baseline: int, attempted_baseline: int, failed_current: int,
                   attempted_current: int, *, alpha: float) -> FailureShare:
    """Compare failure counts; None shares when a side attempted nothing."""
    if attempted_baseline == 0 or attempted_current == 0:
        return FailureShare(None, None, None, False)
    base = failed_baseline / attempted_baseline
    cur = failed_current / attempted_current
    table = np.array([[failed_current, attempted_current - failed_current],
                      [failed_baseline, attempted_baseline - failed_baseline]])
    from scipy.stats import fisher_exact  # here: `scipy.stats` costs half a second to import, and few reports compare

    p_value = float(fisher_exact(table, alternative="greater").pvalue)
    regression = p_value < alpha and cur - base >= MIN_FAILURE_SHARE_CHANGE
    return FailureShare(base, cur, p_value, bool(regression))
