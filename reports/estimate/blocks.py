"""How much independent evidence a time-ordered series holds: batch means over blocks of requests.

Requests through a queue are not independent: a slow second makes the next one slow, a warm
cache makes a whole window fast. A statistic that is a mean (a share of late or failed requests,
the share below a percentile) then varies more from run to run than a count of requests suggests.
Here the series is cut into consecutive blocks of equal length; the spread of the block means,
scaled by the block length, estimates the long-run variance of one observation, and the ratio to
its plain variance is the design effect: `n / design effect` requests carry the evidence of that
many independent ones (the effective sample size).

The block length is chosen from the data: block lengths double from n / `MAX_BLOCKS` requests
(at least one) while at least `MIN_BLOCKS` blocks remain, and the length with the largest
long-run variance is kept (every shorter block still leaks correlation into its neighbours and
understates the spread, every longer one has fewer blocks). A lag-1 correlation r left between
blocks above noise (r > 1.645 / sqrt(blocks), one-sided 5%) widens that length's variance by the
AR(1) factor (1 + r) / (1 - r), r first corrected for its small-sample bias; the few blocks' own
uncertainty is charged by the Korn-Graubard rule: the effective size shrinks by (z / t)^2 with t
on blocks - 1 degrees of freedom. When even the longest blocks stay correlated above noise, the
series remembers longer than the run can show (`Dependence.outlasts_blocks`), and a percentile
says "not enough independent data". docs/concepts/confidence.md shows, on processes whose truth
is known, why batch means rather than a block bootstrap: one pass over the data, so a few million
requests cost milliseconds, and errors within their nominal value on the bench.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import special

METHOD = "batch means"
"""The method named beside every interval built here."""
COUNT_METHOD = "count"
"""Named instead when the series does not vary (no bad request at all) or holds fewer than
2 x `MIN_BLOCKS` points: there is nothing to measure dependence with, so the requests are
counted as independent."""
MIN_BLOCKS = 30
"""Fewest blocks a block length may leave: fewer make the spread of block means too noisy."""
MAX_LAG1 = 0.9
OUTLAST_Z = 1.645
"""Blocks correlated beyond this many standard errors of a lag-1 estimate (1 / sqrt(blocks)),
one-sided 5%, are taken as dependence the blocks could not outlast."""
MAX_BLOCKS = 8192
"""The shortest block length tried leaves at most this many blocks: a block of n / 8192 requests
already holds any dependence shorter than itself, and the search stays a few milliseconds long."""
"""The AR(1) widening is capped here, so one noisy correlation cannot blow the interval up."""


@dataclass(frozen=True)
class Dependence:
    """What the blocks showed: method, block length (requests), number of blocks, lag-1
    correlation of the block means (None when not measured), requests, and the effective sample
    size after the few blocks' own uncertainty is charged."""

    method: str
    block_len: int
    blocks: int
    lag1: float | None
    samples: int
    effective: float
    outlasts_blocks: bool = False
    """True when even the longest blocks stay clearly correlated (lag-1 above 2 / sqrt(blocks)):
    the series remembers longer than the run can show, so no effective size is trustworthy."""

    @property
    def design_effect(self) -> float:
        return self.samples / self.effective if self.effective > 0 else math.inf

    def as_dict(self) -> dict[str, str | int | float | None]:
        return asdict(self)


def lag1(series: np.ndarray) -> float:
    """Lag-1 autocorrelation of `series` (0.0 when it has under three points or does not vary)."""
    if series.size < 3:
        return 0.0
    centred = series - series.mean()
    denominator = float(np.dot(centred, centred))
    return float(np.dot(centred[:-1], centred[1:]) / denominator) if denominator > 0 else 0.0


def block_means(series: np.ndarray, block_len: int) -> np.ndarray:
    """Means of consecutive blocks of about `block_len` points; the blocks share the remainder,
    so no point is dropped."""
    return _means_of(np.concatenate(([0.0], np.cumsum(series, dtype=float))), block_len)


def _means_of(sums: np.ndarray, block_len: int) -> np.ndarray:
    """Block means from the running sums (0 first) of a series."""
    n = sums.size - 1
    edges = np.linspace(0, n, max(1, n // block_len) + 1).round().astype(np.int64)
    return (sums[edges[1:]] - sums[edges[:-1]]) / np.diff(edges)


def dependence(series: np.ndarray, confidence: float = 0.95,
               min_blocks: int = MIN_BLOCKS) -> Dependence:
    """The effective sample size of the mean of `series` (time order, no NaN) by batch means."""
    n = int(series.size)
    variance = float(series.var()) if n else 0.0
    if n < 2 * min_blocks or variance <= 0.0:
        return Dependence(COUNT_METHOD, 1, n, None, n, float(n))
    best = (0.0, 1, n, 0.0)
    sums = np.concatenate(([0.0], np.cumsum(series, dtype=float)))
    block_len = max(1, n // MAX_BLOCKS)
    outlasts = False
    while n // block_len >= min_blocks:
        means = _means_of(sums, block_len)
        r = lag1(means)
        outlasts = r > OUTLAST_Z / np.sqrt(means.size)
        # the lag-1 estimate of a short series is biased low by about (1 + 3r) / blocks (Kendall)
        kept = min(r + (1 + 3 * r) / means.size, MAX_LAG1) if outlasts else 0.0
        widen = (1 + kept) / (1 - kept)
        long_run = float(means.var(ddof=1)) * (n / means.size) * widen
        if long_run > best[0]:
            best = (long_run, block_len, int(means.size), r)
        block_len *= 2
    long_run, chosen, blocks, r = best
    design = max(long_run / variance, 1.0)
    return Dependence(METHOD, chosen, blocks, r, n, n / design * _few_blocks_charge(blocks, confidence),
                      outlasts)


def rank_series(values: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Each value's mid-rank in `values`, scaled to [0, 1]: the series' dependence at every level
    at once, so it is measured from all requests even where the tail holds few. Ties share their
    mid-rank (latencies rounded to the millisecond, or a queue's many requests that never
    waited), so their order in time adds no dependence of its own. `order`, when the caller has
    it, is `np.argsort(values)`."""
    n = values.size
    if n == 0:
        return np.zeros(0)
    if order is None:
        order = np.argsort(values)
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    ends = np.append(starts[1:], n) - 1
    ranks = np.empty(n, dtype=float)
    ranks[order] = np.repeat((starts + ends) / (2.0 * n), ends - starts + 1)
    return ranks


def least_effective(*seen: Dependence) -> Dependence:
    """The most cautious of several measurements of one series' dependence: the smallest
    effective size, outlasting its blocks if any measurement did."""
    least = min(seen, key=lambda one: one.effective)
    return replace(least, outlasts_blocks=any(one.outlasts_blocks for one in seen))


def _few_blocks_charge(blocks: int, confidence: float) -> float:
    """(z / t)^2 with t on blocks - 1 degrees of freedom (Korn and Graubard, 1998)."""
    tail = (1.0 - confidence) / 2.0
    z = float(special.ndtri(1.0 - tail))
    t = float(-special.stdtrit(blocks - 1, tail))
    return (z / t) ** 2
