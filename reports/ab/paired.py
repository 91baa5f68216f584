"""Paired statistics of an A/B run: each arm's percentile over the night, and its failure share.

The estimand is what a user of each version meets: the percentile of all its answered requests of
the population over the night (the measured part of the run), and the share of its attempts that
failed. The two questions are kept apart: a failure has no latency, so it is left out of the
percentiles and counted in the share.

The unit of resampling is the pair of slices (the same minutes for both arms), and the bootstrap
draws *blocks* of consecutive pairs: a server state that outlives one slice (a queue, a cache, a
neighbour's burst, a GC cycle) moves both arms' neighbouring slices together, and resampling whole
blocks of them carries that dependence into the interval, which then widens instead of raising a
false alarm. Every replicate reweights all of both arms' requests by its pair counts, so the
replicate percentile is the night's percentile again, never a slice's maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtrit

from rushhour.kernel.quantiles import percentile_value

DEFAULT_REPLICATES = 1000
POWER = 0.80
"""The power at which the minimum detectable effect is quoted."""
MIN_TAIL = 10
"""Answered requests each arm needs beyond a percentile (P99 needs 1,000) to compare it."""
MIN_PAIRS = 10
"""Pairs of slices holding both arms needed to resample them."""
GRID_STEP = 1.002
"""Relative width of the bins a replicate's percentile is read from (0.2%)."""
MAX_BINS = 6000

__all__ = ["ArmSample", "ErrorTest", "RatioTest", "block_weights", "error_test", "ratio_test", "required_answers"]


@dataclass(frozen=True)
class ArmSample:
    """One arm's attempted requests of one comparison: the answered values with their pair, and
    per attempt whether it failed, with its pair."""

    values: np.ndarray
    pair: np.ndarray
    failed: np.ndarray
    attempt_pair: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray, ok: np.ndarray, pair: np.ndarray) -> ArmSample:
        """Rows without a value (never sent) are dropped; a failure counts as an attempt, not a value."""
        raw = np.asarray(values, dtype=float)
        ok = np.asarray(ok, bool)
        pair = np.asarray(pair, np.int64)
        tried = ~np.isnan(raw)
        answered = ok & tried
        return cls(raw[answered], pair[answered], ~ok[tried], pair[tried])

    @property
    def n(self) -> int:
        """Attempts (answered or failed)."""
        return int(self.failed.size)

    @property
    def answered(self) -> int:
        return int(self.values.size)


@dataclass(frozen=True)
class RatioTest:
    """Candidate/baseline ratio of one percentile over the night, its block-bootstrap interval, the
    pooled percentiles of both arms, the pairs used, the smallest ratio the run could detect, and
    why it was not compared (empty when it was)."""

    percentile: float
    baseline: float
    candidate: float
    ratio: float
    low: float
    high: float
    pairs: int
    mde: float
    not_compared: str = ""

    @property
    def compared(self) -> bool:
        return not self.not_compared


@dataclass(frozen=True)
class ErrorTest:
    """Failure shares of both arms, the difference's interval, and what it shows against `margin`:
    `worse` (the interval lies above 0), `not_worse` (it lies below the margin), else neither."""

    baseline: float
    candidate: float
    difference: float
    low: float
    high: float
    margin: float
    worse: bool
    not_worse: bool


def required_answers(percentile: float) -> int:
    """Answered requests per arm for MIN_TAIL of them to lie beyond `percentile`."""
    return int(np.ceil(round(MIN_TAIL * 100.0 / (100.0 - percentile), 6))) if percentile < 100 else 10**12


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


def ratio_test(baseline: ArmSample, candidate: ArmSample, percentile: float, weights: np.ndarray, *,
               confidence: float, threshold: float) -> RatioTest:
    """The ratio of the arms' night percentiles with its two-sided `confidence` interval."""
    base = percentile_value(baseline.values, percentile) if baseline.answered else float("nan")
    cand = percentile_value(candidate.values, percentile) if candidate.answered else float("nan")
    both = _pairs_with_both(baseline, candidate, weights.shape[1])
    nan = float("nan")
    why = _why_not(baseline, candidate, percentile, int(both.sum()))
    if why:
        return RatioTest(percentile, base, cand, _safe_ratio(cand, base), nan, nan, int(both.sum()), nan, why)
    edges = _grid(np.concatenate([baseline.values, candidate.values]))
    logs = (np.log(_replicates(candidate, weights, percentile, edges))
            - np.log(_replicates(baseline, weights, percentile, edges)))
    logs = logs[np.isfinite(logs)]
    tail = (1.0 - confidence) / 2.0
    z = float(ndtri(1.0 - tail))
    centre = float(np.log(cand / base))
    widen = small_sample_factor(weights.shape[1], tail)
    low, high = (centre + widen * (np.quantile(logs, [tail, 1.0 - tail]) - centre)) if logs.size else (nan, nan)
    se = widen * float(np.std(logs)) if logs.size else nan
    mde = float(np.exp(max(z * se, np.log(threshold)) + ndtri(POWER) * se))
    return RatioTest(percentile, base, cand, _safe_ratio(cand, base), float(np.exp(low)), float(np.exp(high)),
                     int(both.sum()), mde)


def small_sample_factor(pairs: int, tail: float) -> float:
    """How much wider than the bootstrap's own an interval over few independent blocks is drawn: the
    Student quantile for that many blocks over the normal one, with the n/(n-1) variance correction
    (a percentile bootstrap over a dozen blocks covers less than it says)."""
    blocks = max(2, -(-pairs // block_length(pairs)))
    return float(stdtrit(blocks - 1, 1.0 - tail) / ndtri(1.0 - tail) * np.sqrt(blocks / (blocks - 1)))


def _safe_ratio(cand: float, base: float) -> float:
    if not (np.isfinite(cand) and np.isfinite(base)) or base <= 0:
        return float("nan")
    return cand / base


def _pairs_with_both(baseline: ArmSample, candidate: ArmSample, pairs: int) -> np.ndarray:
    counts = [np.bincount(arm.pair[(arm.pair >= 0) & (arm.pair < pairs)], minlength=pairs)
              for arm in (baseline, candidate)]
    return (counts[0] > 0) & (counts[1] > 0)


def _why_not(baseline: ArmSample, candidate: ArmSample, percentile: float, pairs: int) -> str:
    """Why this percentile cannot be compared, in words; empty when it can."""
    need = required_answers(percentile)
    short = [f"the {name} {arm.answered:,}" for name, arm in (("baseline", baseline), ("candidate", candidate))
             if arm.answered < need]
    if short:
        return (f"P{percentile:g} needs {need:,} answered requests per arm ({MIN_TAIL} beyond it); "
                f"{' and '.join(short)}")
    if pairs < MIN_PAIRS:
        return f"P{percentile:g}: {pairs} slice pair(s) hold both arms, and resampling needs {MIN_PAIRS}"
    return ""


def _grid(values: np.ndarray) -> np.ndarray:
    """Geometric bin edges over the values (zeros and negatives read as the smallest positive)."""
    positive = values[values > 0]
    low = float(positive.min()) if positive.size else 1e-3
    high = max(float(values.max()), low * 1.0001)
    step = max(GRID_STEP, (high / low) ** (1.0 / MAX_BINS))
    count = int(np.ceil(np.log(high / low) / np.log(step))) + 1
    return low * step ** np.arange(count + 1)


def _replicates(arm: ArmSample, weights: np.ndarray, percentile: float, edges: np.ndarray) -> np.ndarray:
    """The arm's night percentile in each replicate: every request weighted by its pair's count,
    read at the upper edge of the bin where the weighted share reaches the percentile."""
    pairs, bins = weights.shape[1], edges.size - 1
    keep = (arm.pair >= 0) & (arm.pair < pairs)
    index = np.clip(np.searchsorted(edges, np.maximum(arm.values[keep], edges[0]), side="right") - 1, 0, bins - 1)
    hist = np.bincount(arm.pair[keep] * bins + index, minlength=pairs * bins).reshape(pairs, bins)
    cumulative = np.cumsum(weights @ hist, axis=1)
    total = cumulative[:, -1]
    reached = cumulative >= np.round(percentile / 100.0 * total, 9)[:, None]
    found = np.argmax(reached, axis=1)
    return np.where(total > 0, edges[found + 1], np.nan)


def error_test(baseline: ArmSample, candidate: ArmSample, weights: np.ndarray, *, confidence: float,
               margin: float) -> ErrorTest:
    """Is the candidate's failure share worse, or shown not worse by more than `margin`? The
    difference's interval is the wider, on each side, of a block bootstrap (failures bunched in a
    few slices) and Newcombe's score interval (rare failures, where a bootstrap sees too few)."""
    observed = [float(arm.failed.mean()) if arm.n else float("nan") for arm in (baseline, candidate)]
    tail = (1.0 - confidence) / 2.0
    shares = [_bootstrap_share(arm, weights) for arm in (baseline, candidate)]
    reps = shares[1] - shares[0]
    reps = reps[np.isfinite(reps)]
    boot = np.quantile(reps, [tail, 1.0 - tail]) if reps.size else (np.nan, np.nan)
    score = newcombe(int(candidate.failed.sum()), candidate.n, int(baseline.failed.sum()), baseline.n, tail)
    low, high = float(np.fmin(boot[0], score[0])), float(np.fmax(boot[1], score[1]))
    difference = observed[1] - observed[0]
    return ErrorTest(observed[0], observed[1], difference, low, high, margin,
                     worse=bool(low > 0), not_worse=bool(high < margin))


def _bootstrap_share(arm: ArmSample, weights: np.ndarray) -> np.ndarray:
    pairs = weights.shape[1]
    keep = (arm.attempt_pair >= 0) & (arm.attempt_pair < pairs)
    failed = np.bincount(arm.attempt_pair[keep], weights=arm.failed[keep].astype(float), minlength=pairs)
    tried = np.bincount(arm.attempt_pair[keep], minlength=pairs).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((weights @ failed) / (weights @ tried))


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
