"""Paired statistics of an A/B run: each arm's percentile over the night, and its failure share.

The estimand is what a user of each version meets: the percentile of all its answered requests of
the population over the night (the measured part of the run), and the share of its attempts that
failed. The two questions are kept apart: a failure has no latency, so it is left out of the
percentiles and counted in the share.

The unit of resampling is the pair of slices (the same minutes for both arms), drawn in *blocks* of
consecutive pairs by the statistics core (`rushhour.reports.estimate.pairedblocks`): a server
state that outlives one slice (a queue, a cache, a neighbour's burst, a GC cycle) widens the
interval instead of raising a false alarm, and every replicate's percentile is the night's again,
never a slice's maximum.

Each side of an interval answers its own question at its own error: the lower bound whether the
candidate is slower (`alarm_tail`), the upper bound whether it is shown faster than the threshold
(`pass_tail`); `rushhour.reports.ab.groups` says why the two tails differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from rushhour.kernel.quantiles import percentile_value
from rushhour.reports.estimate.pairedblocks import (
    PairedSample,
    block_weights,
    percentile_ratio,
    share_difference,
)

DEFAULT_REPLICATES = 1000
POWER = 0.80
"""The power at which the minimum detectable effect is quoted."""
MIN_TAIL = 10
"""Answered requests each arm needs beyond a percentile (P99 needs 1,000) to compare it."""
MIN_PAIRS = 10
"""Pairs of slices holding both arms needed to resample them."""

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

    def latencies(self) -> PairedSample:
        return PairedSample(self.values, self.pair)

    def failures(self) -> PairedSample:
        return PairedSample(self.failed, self.attempt_pair)


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


def ratio_test(baseline: ArmSample, candidate: ArmSample, percentile: float, weights: np.ndarray, *,
               alarm_tail: float, pass_tail: float, threshold: float) -> RatioTest:
    """The ratio of the arms' night percentiles; its lower bound leaves out `alarm_tail`, its upper
    bound `pass_tail`."""
    base = percentile_value(baseline.values, percentile) if baseline.answered else float("nan")
    cand = percentile_value(candidate.values, percentile) if candidate.answered else float("nan")
    both = int(_pairs_with_both(baseline, candidate, weights.shape[1]).sum())
    nan = float("nan")
    why = _why_not(baseline, candidate, percentile, both)
    if why:
        return RatioTest(percentile, base, cand, _safe_ratio(cand, base), nan, nan, both, nan, why)
    found = percentile_ratio(baseline.latencies(), candidate.latencies(), percentile, weights, low_tail=alarm_tail,
                             high_tail=pass_tail)
    se = found.log_se
    mde = float(np.exp(max(float(ndtri(1.0 - alarm_tail)) * se, np.log(threshold)) + ndtri(POWER) * se))
    return RatioTest(percentile, base, cand, _safe_ratio(cand, base), found.low, found.high, both, mde)


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


def error_test(baseline: ArmSample, candidate: ArmSample, weights: np.ndarray, *, alarm_tail: float,
               pass_tail: float, margin: float) -> ErrorTest:
    """Is the candidate's failure share worse (the difference's lower bound, leaving out
    `alarm_tail`, above 0), or shown not worse by more than `margin` (its upper bound, leaving out
    `pass_tail`, below it)?"""
    found = share_difference(baseline.failures(), candidate.failures(), weights, low_tail=alarm_tail,
                             high_tail=pass_tail)
    return ErrorTest(found.first, found.second, found.difference, found.low, found.high, margin,
                     worse=bool(found.low > 0), not_worse=bool(found.high < margin))
