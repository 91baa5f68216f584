"""Percentile and share intervals for requests in time order, sized by their effective sample size.

A percentile's interval is the order-statistic interval of `intervals.ci_ranks`, computed for the
effective number of requests behind the share that lies below the percentile (the exceedances of
the point estimate, whose dependence `blocks.dependence` measures) and mapped back onto the
ranks of all requests. A share's interval is Clopper-Pearson on the effective sample size (Korn
and Graubard's design-effect form). With independent requests both fall back to the classic
intervals; with a queue near its knee they widen by as much as the data show. Where the effective
requests cannot bracket the percentile at the stated confidence, or the requests stay correlated
across the longest blocks, the result says so in words and carries no interval at all: a
statement that cannot be made is not printed as a narrow one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import special

from rushhour.kernel.quantiles import nearest_rank
from rushhour.reports.estimate.blocks import Dependence, dependence, least_effective, rank_series
from rushhour.reports.estimate.intervals import CONFIDENCE, binom_ppf
from rushhour.reports.estimate.strata import stratified_dependence


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


def outlasts_text(percentile: float, confidence: float = CONFIDENCE) -> str:
    """"not enough independent data for a P95 at 95%: requests stay correlated from one
    thirtieth of the run to the next, so the run is too short for its memory"."""
    return (f"not enough independent data for a P{percentile:g} at {confidence:.0%}: requests stay "
            "correlated from one thirtieth of the run to the next, so the run is too short for "
            "its memory")


def quantile_interval(values: np.ndarray, percentile: float, confidence: float = CONFIDENCE,
                      strata: np.ndarray | None = None) -> SeriesInterval:
    """The nearest-rank `percentile` of `values` (time order; NaN dropped) with an interval that
    holds under autocorrelation; `strata` (same order), where the run's load changed, measures
    the dependence within each stretch (`rushhour.reports.estimate.strata`)."""
    clean = values[~np.isnan(values)]
    n = int(clean.size)
    if n == 0:
        return SeriesInterval(None, None, None, confidence, dependence(clean, confidence), False,
                              f"no requests to measure a P{percentile:g} on")
    order = np.argsort(clean)
    ordered = clean[order]
    value = float(ordered[nearest_rank(percentile, n) - 1])
    if strata is not None:
        seen = stratified_dependence((clean > value).astype(float), strata[~np.isnan(values)], confidence,
                                     levels=rank_series(clean, order))
    else:
        ranks = dependence(rank_series(clean, order), confidence)
        # the ranks alone say whether the run outlasts its blocks: the sparse exceedances would add
        # their own chance correlations (twice the false "not enough" on independent requests)
        seen = replace(least_effective(dependence((clean > value).astype(float), confidence), ranks),
                       outlasts_blocks=ranks.outlasts_blocks)
    effective = min(seen.effective, float(n))
    size = max(1, math.floor(effective))
    tail = (1.0 - confidence) / 2.0
    q = percentile / 100.0
    lo_rank = math.floor(binom_ppf(tail, size, q) / size * n)
    hi_rank = math.ceil((binom_ppf(1.0 - tail, size, q) + 1) / size * n)
    low = float(ordered[lo_rank - 1]) if lo_rank >= 1 else None
    high = float(ordered[hi_rank - 1]) if hi_rank <= n else None
    if seen.outlasts_blocks:
        return SeriesInterval(value, None, None, confidence, seen, False,
                              outlasts_text(percentile, confidence))
    if effective < needed_effective(percentile, confidence) or low is None or high is None:
        return SeriesInterval(value, None, None, confidence, seen, False,
                              not_enough_text(percentile, effective, confidence))
    return SeriesInterval(value, low, high, confidence, seen, True)


def share_interval(hits: np.ndarray, confidence: float = CONFIDENCE, levels: np.ndarray | None = None,
                   strata: np.ndarray | None = None) -> SeriesInterval:
    """The share of True in `hits` (time order) with a Clopper-Pearson interval on its effective
    sample size. `levels`, the values `hits` was cut from (latencies, same order), also bound the
    dependence: a late share near 1% holds too few late requests to measure it alone."""
    flags = hits.astype(float)
    ranked = rank_series(levels) if levels is not None and levels.size == flags.size else None
    if strata is not None:
        seen = stratified_dependence(flags, strata, confidence, levels=ranked)
    else:
        seen = dependence(flags, confidence)
        if ranked is not None:
            seen = least_effective(seen, dependence(ranked, confidence))
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

