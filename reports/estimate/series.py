"""Percentile and share intervals for requests in time order, sized by their effective sample size.

A percentile's interval is the order-statistic interval of `intervals.ci_ranks`, computed for the
effective number of requests behind the share that lies below the percentile (the exceedances of
the point estimate, whose dependence `blocks.dependence` measures) and mapped back onto the
ranks of all requests. A share's interval is Clopper-Pearson on the effective sample size (Korn
and Graubard's design-effect form). With independent requests both fall back to the classic
intervals; with a queue near its knee they widen by as much as the data show. Where the effective
requests cannot bracket the percentile at the stated confidence, the result says so in words and
carries no upper bound.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

from rushhour.kernel.quantiles import nearest_rank
from rushhour.reports.estimate.blocks import Dependence, dependence
from rushhour.reports.estimate.intervals import CONFIDENCE, binom_ppf


@dataclass(frozen=True)
class SeriesInterval:
    """An estimate with its interval and the dependence behind it. `enough` is False with a
    sentence in `note` when the data cannot carry the statement at `confidence`."""

    value: float | None
    low: float | None
    high: float | None
    confidence: float
    dependence: Dependence
    enough: bool
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def needed_effective(percentile: float, confidence: float = CONFIDENCE) -> int:
    """Fewest independent requests whose order statistics bracket `percentile` on both sides at
    `confidence` (368 for a P99 at 95%, 3,688 for a P99.9)."""
    tail = (1.0 - confidence) / 2.0
    q = percentile / 100.0
    return max(1, math.ceil(round(math.log(tail) / math.log(max(q, 1.0 - q)), 9)))


def not_enough_text(percentile: float, effective: float, confidence: float = CONFIDENCE) -> str:
    """"not enough independent data for a P99 at 95%: 41 effective requests, at least 367 needed"."""
    return (f"not enough independent data for a P{percentile:g} at {confidence:.0%}: "
            f"{math.floor(effective):,} effective requests, at least "
            f"{needed_effective(percentile, confidence):,} needed")


def quantile_interval(values: np.ndarray, percentile: float,
                      confidence: float = CONFIDENCE) -> SeriesInterval:
    """The nearest-rank `percentile` of `values` (time order; NaN dropped) with an interval that
    holds under autocorrelation."""
    clean = values[~np.isnan(values)]
    n = int(clean.size)
    if n == 0:
        return SeriesInterval(None, None, None, confidence, dependence(clean, confidence), False,
                              f"no requests to measure a P{percentile:g} on")
    ordered = np.sort(clean)
    value = float(ordered[nearest_rank(percentile, n) - 1])
    seen = dependence((clean > value).astype(float), confidence)
    effective = min(seen.effective, float(n))
    size = max(1, math.floor(effective))
    tail = (1.0 - confidence) / 2.0
    q = percentile / 100.0
    lo_rank = math.floor(binom_ppf(tail, size, q) / size * n)
    hi_rank = math.ceil((binom_ppf(1.0 - tail, size, q) + 1) / size * n)
    low = float(ordered[lo_rank - 1]) if lo_rank >= 1 else None
    high = float(ordered[hi_rank - 1]) if hi_rank <= n else None
    enough = effective >= needed_effective(percentile, confidence) and low is not None and high is not None
    note = None if enough else not_enough_text(percentile, effective, confidence)
    return SeriesInterval(value, low, high, confidence, seen, enough, note)


def share_interval(hits: np.ndarray, confidence: float = CONFIDENCE) -> SeriesInterval:
    """The share of True in `hits` (time order) with a Clopper-Pearson interval on its effective
    sample size."""
    flags = hits.astype(float)
    seen = dependence(flags, confidence)
    n = int(flags.size)
    if n == 0:
        return SeriesInterval(None, None, None, confidence, seen, False, "no requests to count")
    share = float(flags.mean())
    size = min(seen.effective, float(n))
    count = share * size
    tail = (1.0 - confidence) / 2.0
    # the Beta quantiles of Clopper-Pearson (`betaincinv` is `scipy.stats.beta.ppf`'s own function)
    low = float(special.betaincinv(count, size - count + 1, tail)) if count > 0 else 0.0
    high = float(special.betaincinv(count + 1, size - count, 1 - tail)) if count < size else 1.0
    return SeriesInterval(share, low, high, confidence, seen, True)
