"""Paired two-sample comparisons resampled by moving blocks of slice pairs: a ratio of percentiles
and a difference of shares, each with its interval.

Two samples are measured over the same slices of time (pair k holds both samples' observations
of slice k). A replicate draws blocks of consecutive pairs and weights every observation by how
often its pair was drawn, so a state that outlives one slice (a queue, a cache, a neighbour's
burst) moves with its block and widens the interval instead of narrowing it, and the replicate's
percentile is again a percentile of all the observations, never of one slice.

The bounds are read from the replicates around the observed figure, each side at its own tail
(a test may spend a different error on each side), and widened for few blocks by the Student
quantile over the normal one. A share difference takes, on each side, the wider of the bootstrap
and Newcombe's score interval, which stays honest where failures are too rare for a bootstrap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtrit

from rushhour.kernel.quantiles import percentile_value

GRID_STEP = 1.002
"""Relative width of the bins a replicate's percentile is read from (0.2%)."""
MAX_BINS = 6000
CHUNK = 64
"""Occupied bins searched together in the first pass of a replicate's percentile."""

__all__ = ["PairedSample", "RatioInterval", "ShareDifference", "block_length", "block_weights", "newcombe",
           "percentile_ratio", "share_difference", "small_sample_factor", "wilson"]


@dataclass(frozen=True)
class PairedSample:
    """One sample's observations with the pair (slice) each belongs to."""

    values: np.ndarray
    pair: np.ndarray

    def within(self, pairs: int) -> np.ndarray:
        """Which observations lie in pairs 0..pairs-1."""
        return (self.pair >= 0) & (self.pair < pairs)


@dataclass(frozen=True)
class RatioInterval:
    """Second/first ratio of percentiles: the observed figure, its bounds, and the standard error
    of its logarithm (widened alike), from which a minimum detectable effect follows."""

    ratio: float
    low: float
    high: float
    log_se: float


@dataclass(frozen=True)
class ShareDifference:
    """Second minus first share, with its bounds."""

    first: float
    second: float
    difference: float
    low: float
    high: float


def block_length(pairs: int) -> int:
    """Consecutive pairs drawn together: about the cube root of their number (at least 1)."""
    return max(1, int(round(pairs ** (1.0 / 3.0))))


def block_weights(pairs: int, replicates: int, seed: int, block: int | None = None) -> np.ndarray:
    """How often each pair is drawn in each moving-block bootstrap replicate (replicates x pairs)."""
    if pairs == 0:
        return np.zeros((replicates, 0))
    block = min(block or block_length(pairs), pairs)
    rng = np.random.default_rng([seed, 0xB10C])
    blocks = -(-pairs // block)
    starts = rng.integers(0, pairs - block + 1, size=(replicates, blocks))
    drawn = (starts[:, :, None] + np.arange(block)).reshape(replicates, -1)[:, :pairs]
    drawn = drawn + pairs * np.arange(replicates)[:, None]
    return np.bincount(drawn.ravel(), minlength=replicates * pairs).reshape(replicates, pairs).astype(float)


def small_sample_factor(pairs: int, tail: float) -> float:
    """How much wider than the bootstrap's own an interval over few independent blocks is drawn: the
    Student quantile for that many blocks over the normal one, with the n/(n-1) variance correction
    (a percentile bootstrap over a dozen blocks covers less than it says)."""
    blocks = max(2, -(-pairs // block_length(pairs)))
    return float(stdtrit(blocks - 1, 1.0 - tail) / ndtri(1.0 - tail) * np.sqrt(blocks / (blocks - 1)))


def percentile_ratio(first: PairedSample, second: PairedSample, percentile: float, weights: np.ndarray, *,
                     low_tail: float, high_tail: float) -> RatioInterval:
    """The ratio of the samples' nearest-rank percentiles, its lower bound leaving out `low_tail`
    and its upper bound `high_tail` of the block bootstrap (both widened for few blocks)."""
    a, b = percentile_value(first.values, percentile), percentile_value(second.values, percentile)
    nan = float("nan")
    if not (np.isfinite(a) and np.isfinite(b)) or a <= 0 or b <= 0:
        return RatioInterval(nan, nan, nan, nan)
    edges = _grid(np.concatenate([first.values, second.values]))
    logs = np.log(_replicates(second, weights, percentile, edges)) - np.log(_replicates(first, weights, percentile,
                                                                                        edges))
    logs = logs[np.isfinite(logs)]
    if not logs.size:
        return RatioInterval(b / a, nan, nan, nan)
    centre, pairs = float(np.log(b / a)), weights.shape[1]
    low = centre + small_sample_factor(pairs, low_tail) * (float(np.quantile(logs, low_tail)) - centre)
    high = centre + small_sample_factor(pairs, high_tail) * (float(np.quantile(logs, 1.0 - high_tail)) - centre)
    se = small_sample_factor(pairs, min(low_tail, high_tail)) * float(np.std(logs))
    return RatioInterval(b / a, float(np.exp(low)), float(np.exp(high)), se)


def _grid(values: np.ndarray) -> np.ndarray:
    """Geometric bin edges over the values (zeros and negatives read as the smallest positive)."""
    positive = values[values > 0]
    low = float(positive.min()) if positive.size else 1e-3
    high = max(float(values.max()), low * 1.0001)
    step = max(GRID_STEP, (high / low) ** (1.0 / MAX_BINS))
    count = int(np.ceil(np.log(high / low) / np.log(step))) + 1
    return low * step ** np.arange(count + 1)


def _replicates(sample: PairedSample, weights: np.ndarray, percentile: float, edges: np.ndarray) -> np.ndarray:
    """The sample's percentile in each replicate: every observation weighted by its pair's count,
    read at the upper edge of the bin where the weighted share reaches the percentile."""
    pairs, bins = weights.shape[1], edges.size - 1
    keep = sample.within(pairs)
    index = np.clip(np.searchsorted(edges, np.maximum(sample.values[keep], edges[0]), side="right") - 1, 0, bins - 1)
    hist = np.bincount(sample.pair[keep] * bins + index, minlength=pairs * bins).reshape(pairs, bins)
    # Only the bins some observation fell in: the weighted share grows only there, so the first bin
    # that reaches the percentile is one of them, and the sums run over far fewer columns.
    occupied = np.flatnonzero(hist.any(axis=0))
    if not occupied.size:
        return np.full(weights.shape[0], np.nan)
    found, total = _first_reaching(weights, hist[:, occupied], percentile)
    return np.where(total > 0, edges[occupied[found] + 1], np.nan)


def _first_reaching(weights: np.ndarray, hist: np.ndarray, percentile: float) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate, the first column of `hist` (pairs x columns) where the weighted running count
    reaches `percentile` of the replicate's total, and that total.

    Searched in two passes, so no replicate's running count is summed over every column: first over
    chunks of `CHUNK` columns, then within the one chunk where the count is reached. Counts and
    weights are whole numbers, so every sum is exact and the answer is the one a running sum over
    every column gives."""
    columns = hist.shape[1]
    chunks = -(-columns // CHUNK)
    padded = np.zeros((hist.shape[0], chunks * CHUNK))
    padded[:, :columns] = hist
    by_chunk = padded.reshape(hist.shape[0], chunks, CHUNK)
    counted = np.cumsum(weights @ by_chunk.sum(axis=2), axis=1)  # reps x chunks: counted up to each chunk's end
    total = counted[:, -1]
    need = np.round(percentile / 100.0 * total, 9)
    chunk = np.minimum(np.argmax(counted >= need[:, None], axis=1), chunks - 1)
    column = np.empty(weights.shape[0], dtype=int)
    for where in np.unique(chunk):  # few: replicates' percentiles lie close together
        rows = np.flatnonzero(chunk == where)
        before = counted[rows, where - 1] if where > 0 else np.zeros(rows.size)
        running = before[:, None] + np.cumsum(weights[rows] @ by_chunk[:, where, :], axis=1)
        column[rows] = where * CHUNK + np.argmax(running >= need[rows, None], axis=1)
    return np.minimum(column, columns - 1), total


def share_difference(first: PairedSample, second: PairedSample, weights: np.ndarray, *, low_tail: float,
                     high_tail: float) -> ShareDifference:
    """Second minus first share of true `values` (booleans), with the wider on each side of the
    block bootstrap and Newcombe's score interval, leaving out `low_tail` below and `high_tail` above."""
    shares = [float(s.values.mean()) if s.values.size else float("nan") for s in (first, second)]
    reps = _bootstrap_share(second, weights) - _bootstrap_share(first, weights)
    reps = reps[np.isfinite(reps)]
    boot = (float(np.quantile(reps, low_tail)), float(np.quantile(reps, 1.0 - high_tail))) if reps.size \
        else (np.nan, np.nan)
    hits = [int(np.sum(s.values)) for s in (first, second)]
    score_low = newcombe(hits[1], second.values.size, hits[0], first.values.size, low_tail)[0]
    score_high = newcombe(hits[1], second.values.size, hits[0], first.values.size, high_tail)[1]
    return ShareDifference(shares[0], shares[1], shares[1] - shares[0], float(np.fmin(boot[0], score_low)),
                           float(np.fmax(boot[1], score_high)))


def _bootstrap_share(sample: PairedSample, weights: np.ndarray) -> np.ndarray:
    pairs = weights.shape[1]
    keep = sample.within(pairs)
    hits = np.bincount(sample.pair[keep], weights=sample.values[keep].astype(float), minlength=pairs)
    tried = np.bincount(sample.pair[keep], minlength=pairs).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((weights @ hits) / (weights @ tried))


def wilson(hits: int, n: int, tail: float) -> tuple[float, float]:
    """Wilson's score interval of a share, `tail` left out on each side."""
    if n == 0:
        return 0.0, 1.0
    z = float(ndtri(1.0 - tail))
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(hits1: int, n1: int, hits2: int, n2: int, tail: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval of share1 - share2 (method 10 of his 1998 comparison)."""
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan")
    p1, p2 = hits1 / n1, hits2 / n2
    (l1, u1), (l2, u2) = wilson(hits1, n1, tail), wilson(hits2, n2, tail)
    d = p1 - p2
    return d - float(np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)), d + float(np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))
