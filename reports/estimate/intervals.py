"""Exact percentiles with distribution-free confidence intervals.

A percentile here is the nearest-rank order statistic (an observed latency, never an
interpolation), and its 95% interval comes from the binomial distribution of how many samples
fall below the true quantile. That interval needs no assumption about the latency distribution,
which matters because latencies are anything but normal.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import ClassVar

import numpy as np
from pydantic import ConfigDict
from scipy import special

from rushhour.kernel.quantiles import nearest_rank

CONFIDENCE = 0.95
SUMMARY_PERCENTILES = (50.0, 95.0, 99.0, 99.9)


@dataclass(frozen=True)
class Percentile:
    """One percentile with its sample count, 95% interval and whether enough samples back it;
    summary.json's `latency_detail` entries are validated against these fields (a misspelt key is refused)."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    percentile: float
    value: float | None
    samples: int
    ci_low: float | None
    ci_high: float | None
    trusted: bool

    def as_dict(self) -> dict[str, float | int | bool | None]:
        return asdict(self)


def min_samples(percentile: float) -> int:
    """Fewest samples for which the tail beyond `percentile` holds at least one observation."""
    return max(2, math.ceil(round(100.0 / (100.0 - percentile), 9)))


def ci_ranks(percentile: float, n: int, confidence: float = CONFIDENCE) -> tuple[int, int]:
    """1-based ranks (lo, hi) bracketing the quantile with at least `confidence` coverage.

    lo may be 0 and hi may be n + 1, meaning that side of the interval is unbounded by the data.
    """
    tail = (1.0 - confidence) / 2.0
    q = percentile / 100.0
    lo = binom_ppf(tail, n, q)
    hi = binom_ppf(1.0 - tail, n, q) + 1
    return lo, hi


def binom_ppf(prob: float, n: int, p: float) -> int:
    """The smallest k with P(Binomial(n, p) <= k) >= prob, for 0 < prob < 1, from the binomial CDF
    and its continuous inverse in `scipy.special`, without importing `scipy.stats` (half a second in
    every report). In the tails the ranks use it equals `scipy.stats.binom.ppf`
    (tests/reports/estimate/test_intervals.py); where `prob` is exactly a CDF value (a median of an odd n at
    p = 0.5) rounding may put it one step apart."""
    if n == 0 or p <= 0.0:
        return 0  # every draw is 0
    if p >= 1.0:
        return n
    k = math.ceil(float(special.bdtrik(prob, n, p)))
    below = max(k - 1, 0)
    return below if float(special.bdtr(below, n, p)) >= prob else k


def percentile_of(values: np.ndarray, percentile: float) -> Percentile:
    """The exact percentile of `values` (NaN dropped) with its interval and trust flag."""
    clean = np.sort(values[~np.isnan(values)])
    return percentile_sorted(clean, percentile)


def percentile_sorted(ordered: np.ndarray, percentile: float) -> Percentile:
    """Like percentile_of, for data already sorted and free of NaN (saves a sort per call)."""
    n = int(ordered.size)
    if n == 0:
        return Percentile(percentile, None, 0, None, None, False)
    value = float(ordered[nearest_rank(percentile, n) - 1])
    lo, hi = ci_ranks(percentile, n)
    low = float(ordered[lo - 1]) if lo >= 1 else None
    high = float(ordered[hi - 1]) if hi <= n else None
    trusted = n >= min_samples(percentile) and low is not None and high is not None
    return Percentile(percentile, value, n, low, high, trusted)


def summary_percentiles(values: np.ndarray) -> dict[str, Percentile]:
    """P50/P95/P99/P99.9 of one latency column, keyed "p50", "p95", "p99", "p999"."""
    ordered = np.sort(values[~np.isnan(values)])
    return {key_of(p): percentile_sorted(ordered, p) for p in SUMMARY_PERCENTILES}


def key_of(percentile: float) -> str:
    """ "p99" for 99, "p999" for 99.9."""
    return "p" + f"{percentile:g}".replace(".", "")


def grouped_percentiles(groups: np.ndarray, values: np.ndarray, percentile: float,
                        n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Nearest-rank percentile per integer group id in [0, n_groups), vectorised.

    Returns (value per group, NaN where empty; count per group). One lexsort replaces a
    groupby-apply, which matters at a million requests.
    """
    keep = ~np.isnan(values) & (groups >= 0) & (groups < n_groups)
    groups, values = groups[keep].astype(np.int64), values[keep]
    order = np.lexsort((values, groups))
    counts = np.bincount(groups, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    ranks = np.ceil(np.round(percentile / 100.0 * counts, 9)).astype(np.int64)
    ranks = np.clip(ranks, 1, None)
    result = np.full(n_groups, np.nan)
    filled = counts > 0
    result[filled] = values[order][starts[filled] + ranks[filled] - 1]
    return result, counts
