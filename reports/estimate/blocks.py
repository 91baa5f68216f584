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
blocks that is clearly above noise (r > 2 / sqrt(blocks)) widens that length's variance by the
AR(1) factor (1 + r) / (1 - r), and the few blocks' own uncertainty is charged by the
Korn-Graubard rule: the effective size shrinks by (z / t)^2 with t on blocks - 1 degrees of
freedom. docs/concepts/confidence.md shows, on processes whose truth is known, why batch means
rather than a block bootstrap: one pass over the data, so a few million requests cost
milliseconds, and coverage at its nominal value on the bench.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

METHOD = "batch means"
"""The method named beside every interval built here."""
COUNT_METHOD = "count"
"""Named instead when the series does not vary (no bad request at all): there is nothing to
measure dependence with, so the requests are counted as independent."""
MIN_BLOCKS = 30
"""Fewest blocks a block length may leave: fewer make the spread of block means too noisy."""
MAX_LAG1 = 0.9
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
    while n // block_len >= min_blocks:
        means = _means_of(sums, block_len)
        r = lag1(means)
        kept = min(r, MAX_LAG1) if r > 2.0 / np.sqrt(means.size) else 0.0
        widen = (1 + kept) / (1 - kept)
        long_run = float(means.var(ddof=1)) * (n / means.size) * widen
        if long_run > best[0]:
            best = (long_run, block_len, int(means.size), r)
        block_len *= 2
    long_run, chosen, blocks, r = best
    design = max(long_run / variance, 1.0)
    return Dependence(METHOD, chosen, blocks, r, n, n / design * _few_blocks_charge(blocks, confidence))


def _few_blocks_charge(blocks: int, confidence: float) -> float:
    """(z / t)^2 with t on blocks - 1 degrees of freedom (Korn and Graubard, 1998)."""
    tail = (1.0 - confidence) / 2.0
    z = float(special.ndtri(1.0 - tail))
    t = float(-special.stdtrit(blocks - 1, tail))
    return (z / t) ** 2
