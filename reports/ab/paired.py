"""Paired statistics of an A/B run: percentile ratios and error shares over trial pairs.

Requests of one trial share the machine's state (a neighbour's burst, a warm cache), so they are
not independent samples; the unit is the pair of adjacent trials, one per arm, whose order inside
the pair was drawn at random. For a percentile, each pair gives one log ratio (the candidate
trial's percentile over the baseline trial's); under "no difference" these are symmetric about
zero whatever the machine did, so the Wilcoxon signed-rank test and its Hodges-Lehmann interval
hold exactly, with no assumption about the noise, and one trial hit by a burst moves one pair,
not the verdict. A failed attempt is infinitely slow: it sorts above every answer. The error share
gets its own test (`error_test`): a pair bootstrap and an exact binomial test must both agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from rushhour.kernel.quantiles import percentile_value
from rushhour.reports.estimate.intervals import grouped_percentiles

DEFAULT_REPLICATES = 2000
POWER = 0.80
"""The power at which the minimum detectable effect is quoted."""
INFINITE_LOG = 1e6
"""A log ratio standing for "one side failed beyond the percentile"; any average that includes it
stays beyond INFINITE_CUT, far above every real log ratio (|log| < 100), and reads as infinite."""
INFINITE_CUT = INFINITE_LOG / 10.0
EXACT_PAIRS = 400
"""Up to this many pairs the signed-rank distribution is computed exactly, beyond it approximated."""

__all__ = ["ArmSample", "ErrorTest", "RatioTest", "error_test", "pair_weights", "ratio_test"]


@dataclass(frozen=True)
class ArmSample:
    """One arm's attempted requests of one comparison: value (inf when failed), failed, pair id."""

    values: np.ndarray
    failed: np.ndarray
    pair: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray, ok: np.ndarray, pair: np.ndarray) -> ArmSample:
        """Failures become +inf; rows without a value (never sent) are dropped."""
        raw = np.asarray(values, dtype=float)
        values = np.where(np.asarray(ok, bool), raw, np.where(np.isnan(raw), np.nan, np.inf))
        keep = ~np.isnan(values)
        return cls(values[keep], ~np.asarray(ok, bool)[keep], np.asarray(pair, np.int64)[keep])

    @property
    def n(self) -> int:
        return int(self.values.size)


@dataclass(frozen=True)
class RatioTest:
    """Candidate/baseline ratio of one percentile (Hodges-Lehmann over pairs), its interval, the
    pooled percentiles of both arms, the pairs used, and the smallest ratio the run could detect."""

    percentile: float
    baseline: float
    candidate: float
    ratio: float
    low: float
    high: float
    pairs: int
    mde: float
    needed_pairs: int
    """The fewest pairs with which this confidence can exclude anything at all."""


@dataclass(frozen=True)
class ErrorTest:
    """Error shares of both arms, the difference's interval, and the one-sided p-value."""

    baseline: float
    candidate: float
    difference: float
    low: float
    high: float
    p_value: float
    worse: bool


def pair_weights(pairs: int, replicates: int, seed: int) -> np.ndarray:
    """How often each pair is drawn in each bootstrap replicate (replicates x pairs)."""
    rng = np.random.default_rng([seed, 0xB007])
    drawn = rng.integers(0, pairs, size=(replicates, pairs)) + pairs * np.arange(replicates)[:, None]
    return np.bincount(drawn.ravel(), minlength=replicates * pairs).reshape(replicates, pairs)


def pair_log_ratios(baseline: ArmSample, candidate: ArmSample, percentile: float, pairs: int) -> np.ndarray:
    """Per pair holding both arms, log(candidate's percentile / baseline's); a failure beyond the
    percentile counts as INFINITE_LOG. A pair where both arms failed beyond it is left out: it
    says nothing about the ratio, and counting it as "no difference" would narrow the interval
    around 1 exactly when the machine was too saturated to measure (fewer pairs, wider interval).
    A pair where both arms read exactly 0 (a figure such as time to first token that a protocol
    can report as 0) is left out for the same reason: 0/0 is no ratio."""
    base, n_base = grouped_percentiles(baseline.pair, baseline.values, percentile, pairs)
    cand, n_cand = grouped_percentiles(candidate.pair, candidate.values, percentile, pairs)
    both = (n_base > 0) & (n_cand > 0) & ~(np.isinf(base) & np.isinf(cand)) & ~((base == 0) & (cand == 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(cand[both]) - np.log(base[both])
    return np.clip(logs, -INFINITE_LOG, INFINITE_LOG)


def ratio_test(baseline: ArmSample, candidate: ArmSample, percentile: float, pairs: int, *,
               confidence: float, threshold: float) -> RatioTest:
    """Hodges-Lehmann ratio over pairs with its two-sided `confidence` signed-rank interval."""
    logs = pair_log_ratios(baseline, candidate, percentile, pairs)
    centre, low, high = hodges_lehmann(logs, (1.0 - confidence) / 2.0)
    z = float(ndtri(1.0 - (1.0 - confidence) / 2.0))
    bounded = max(abs(low), abs(high)) < INFINITE_CUT
    se = (high - low) / (2.0 * z) if bounded else float("nan")
    mde = float(np.exp(max(z * se, np.log(threshold)) + ndtri(POWER) * se)) if np.isfinite(se) else float("nan")
    base = percentile_value(baseline.values, percentile)
    cand = percentile_value(candidate.values, percentile)
    needed = int(np.ceil(np.log2(2.0 / (1.0 - confidence))))  # P(every pair one way) = 2^-n <= the tail
    return RatioTest(percentile, base, cand, _ratio(centre), _ratio(low), _ratio(high), int(logs.size), mde, needed)


def _ratio(log_value: float) -> float:
    """e^log, with the INFINITE_LOG stand-in turned back into 0 or inf (NaN stays NaN)."""
    if np.isnan(log_value):
        return float("nan")
    if abs(log_value) >= INFINITE_CUT:
        return float("inf") if log_value > 0 else 0.0
    return float(np.exp(log_value))


def hodges_lehmann(d: np.ndarray, tail: float) -> tuple[float, float, float]:
    """The median of the Walsh averages of `d` and the distribution-free interval around it that
    leaves out at most `tail` on each side (signed-rank test inverted); -inf/inf bounds when
    there are too few pairs to exclude anything at that level."""
    n = int(d.size)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    k = _excluded(n, tail)
    if k == 0:
        return float(np.median(walsh)), -np.inf, np.inf
    return float(np.median(walsh)), float(walsh[k - 1]), float(walsh[walsh.size - k])


def _excluded(n: int, tail: float) -> int:
    """How many Walsh averages each tail of the interval leaves out: the largest c with
    P(T < c) <= tail, T the signed-rank statistic of n pairs under no difference."""
    if n > EXACT_PAIRS:
        mean, sd = n * (n + 1) / 4.0, np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        return max(0, int(np.floor(mean - ndtri(1.0 - tail) * sd)))
    dist = np.zeros(n * (n + 1) // 2 + 1)
    dist[0] = 1.0
    for rank in range(1, n + 1):
        shifted = np.zeros_like(dist)
        shifted[rank:] = dist[:-rank]
        dist = (dist + shifted) / 2.0
    below = np.cumsum(dist)  # below[c] = P(T <= c)
    return int(np.searchsorted(below, tail, side="right"))


def error_test(baseline: ArmSample, candidate: ArmSample, weights: np.ndarray, *, confidence: float) -> ErrorTest:
    """Does the candidate fail more often? Both a pair bootstrap of the share difference (robust to
    failures bunched in a few trials) and an exact conditional binomial test (robust when failures
    are rare) must say so at the one-sided level (1 - confidence) / 2."""
    pairs = weights.shape[1]
    shares = [_bootstrap_share(arm, weights, pairs) for arm in (baseline, candidate)]
    observed = [float(arm.failed.mean()) if arm.n else float("nan") for arm in (baseline, candidate)]
    tail = (1.0 - confidence) / 2.0
    low, high = _quantiles(shares[1] - shares[0], tail)
    failures = int(baseline.failed.sum() + candidate.failed.sum())
    expected = candidate.n / max(baseline.n + candidate.n, 1)
    p_value = _greater_p(int(candidate.failed.sum()), failures, expected) if failures else 1.0
    worse = bool(low > 0 and p_value < tail)
    return ErrorTest(observed[0], observed[1], observed[1] - observed[0], low, high, p_value, worse)


def _quantiles(reps: np.ndarray, tail: float) -> tuple[float, float]:
    """Percentile-bootstrap bounds from the observed replicates (NaN when any replicate is NaN)."""
    if reps.size == 0 or np.isnan(reps).any():
        return float("nan"), float("nan")
    ordered = np.sort(reps)
    return (float(ordered[int(np.floor(tail * (ordered.size - 1)))]),
            float(ordered[int(np.ceil((1.0 - tail) * (ordered.size - 1)))]))


def _bootstrap_share(arm: ArmSample, weights: np.ndarray, pairs: int) -> np.ndarray:
    failed = np.bincount(arm.pair, weights=arm.failed.astype(float), minlength=pairs)
    tried = np.bincount(arm.pair, minlength=pairs).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ failed) / (weights @ tried)


def _greater_p(hits: int, n: int, p: float) -> float:
    """One-sided binomial test's p-value (more hits than `p` predicts)."""
    # imported here: `scipy.stats` costs half a second, and an A/B report needs it only for this test
    from scipy.stats import binomtest

    return float(binomtest(hits, n, p, alternative="greater").pvalue)
