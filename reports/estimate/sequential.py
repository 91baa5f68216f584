"""The sequential design behind a capacity step's verdict: planned looks, error spending, and an
effective sample size for latencies that are not independent.

A step is looked at a few planned times (`LOOKS`, evenly spread over its measurement window),
never at every poll: each look at the data is one more chance of a wrong call, and a design that
looks K times must spend its error rate over them. Each direction ("met" and "missed") gets its
own one-sided 5% error, spent with the Lan-DeMets O'Brien-Fleming function
alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)): almost nothing at the first look, most at the last,
so an early call needs overwhelming evidence and the final look keeps nearly its full level.
The boundary of each look solves the joint normal law of the looks' statistics (correlation
sqrt(t_i / t_j)), so the error over all looks together is the stated one, not a union bound.

Neighbouring requests share a queue, so their latencies are correlated and n requests carry the
information of fewer independent ones. The design effect D (variance of the bad share over its
binomial variance) is estimated by batch means, both on the bad indicator itself and on a
commoner pilot indicator (a request among the slowest five times the allowed share, e.g. the
slowest 5% for a P99, and slower than half the threshold), whose clusters show the queue's
memory even when bad requests are few; the larger is used. The share's Clopper-Pearson bounds
are then taken over n/D requests with bad/D of them bad. `tests/reports/estimate/test_sequential.py`
simulates thousands of steps of known truth (independent, AR(1) and queueing latencies) and
checks that both wrong calls stay at or below 5%.

A search may spend a larger error on "met" in each step when its figure must pass two steps
anyway (`paired_error`): a calibration's capacity is reported only once a second window at or
above it passed too, so a rate that truly misses must be called met twice; at sqrt(5%) = 22.4%
for each window the two together are wrong at most 5% of the time, as long as the two windows'
sampling errors are independent (`benchmarks/sequential_sim.py --paired` checks it with the two
windows taken back to back from one queue). "Missed" keeps its 5% in every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import betaincinv, ndtr, ndtri

__all__ = ["ALPHA", "LOOKS", "PILOT_FLOOR", "LookCall", "design_effect", "look_call", "look_fractions", "nominal_levels",
           "paired_error", "share_calls"]

ALPHA = 0.05
LOOKS = 4
BATCHES = 10
MIN_BATCH = 5
PILOT_FACTOR = 5.0
PILOT_MAX = 0.25
PILOT_FLOOR = 0.5
MVN_SEED = 20261201
SCORE_DIGITS = 1
WORST = 1e300


def paired_error(alpha: float = ALPHA) -> float:
    """The error each of two independent windows may spend on "met" so that both are wrong
    together at most `alpha` of the time."""
    return float(np.sqrt(alpha))


def look_fractions(looks: int = LOOKS) -> np.ndarray:
    """The information fraction of each planned look: evenly spread, the last at 1."""
    return np.arange(1, looks + 1, dtype=float) / looks


def _spent(t: np.ndarray, alpha: float) -> np.ndarray:
    """Lan-DeMets O'Brien-Fleming spending: the error allowed up to information fraction t."""
    return 2.0 - 2.0 * ndtr(ndtri(1.0 - alpha / 2.0) / np.sqrt(t))


@lru_cache(maxsize=16)
def _boundaries(looks: int, alpha: float) -> tuple[float, ...]:
    t = look_fractions(looks)
    spent = _spent(t, alpha)
    corr = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    bounds = [float(ndtri(1.0 - spent[0]))]
    for k in range(1, looks):
        bounds.append(_next_bound(bounds, corr[: k + 1, : k + 1], float(spent[k] - spent[k - 1])))
    return tuple(bounds)


def _next_bound(bounds: list[float], corr: np.ndarray, target: float) -> float:
    """The boundary c of the next look: P(no earlier crossing, this one crosses c) = target."""
    # here: `scipy.stats` and `scipy.optimize` cost half a second to import, and the boundaries are
    # computed once per process, only where a capacity step is judged
    from scipy.optimize import brentq
    from scipy.stats import multivariate_normal

    k = len(bounds)
    below = float(multivariate_normal(mean=np.zeros(k), cov=corr[:k, :k], seed=MVN_SEED).cdf(np.array(bounds)))
    law = multivariate_normal(mean=np.zeros(k + 1), cov=corr, seed=MVN_SEED)

    def crossing(c: float) -> float:
        return below - float(law.cdf(np.array([*bounds, c]))) - target

    return float(brentq(crossing, 0.0, 8.0, xtol=1e-6))


def nominal_levels(looks: int = LOOKS, alpha: float = ALPHA) -> np.ndarray:
    """The one-sided level each look's bound is taken at (1 - Phi(boundary))."""
    return 1.0 - ndtr(np.array(_boundaries(looks, alpha)))


def _batch_effect(x: np.ndarray) -> np.ndarray:
    """Batch-means design effect of indicator rows `x` (steps x n): m Var(batch means) / p(1-p)."""
    n = x.shape[-1]
    size = max(MIN_BATCH, n // BATCHES)
    count = n // size
    if count < 2:
        return np.ones(x.shape[:-1])
    means = x[..., : count * size].reshape(*x.shape[:-1], count, size).mean(axis=-1)
    p = x.mean(axis=-1)
    spread = p * (1.0 - p)
    ratio = size * means.var(axis=-1, ddof=1) / np.where(spread > 0, spread, 1.0)
    return np.where(spread > 0, np.maximum(ratio, 1.0), 1.0)


def design_effect(bad: np.ndarray, score: np.ndarray | None = None, allowed: float = 0.01,
                  floor: float = -np.inf) -> np.ndarray:
    """How many requests carry the information of one independent request (at least 1).

    `bad` (steps x n, in send order) marks the requests that count against the objective; `score`
    (same shape, larger is worse, NaN unknown) adds the pilot indicator: a request among its
    step's slowest PILOT_FACTOR x `allowed` share of `score` (ties at the cut are not past it), and
    above `floor`: bursts of requests far faster than the objective's threshold say little about
    how the requests past it cluster.
    """
    bad = np.atleast_2d(np.asarray(bad, dtype=float))
    effect = _batch_effect(bad)
    if score is not None:
        score = np.atleast_2d(np.asarray(score, dtype=float))
        worst = ~np.isfinite(score)  # unknown or failed: past any cut
        filled = np.round(np.where(worst, WORST, score), SCORE_DIGITS)  # ties stay ties
        cut = np.quantile(filled, 1.0 - min(PILOT_FACTOR * allowed, PILOT_MAX), axis=-1, keepdims=True)
        cut = np.maximum(cut, floor)
        effect = np.maximum(effect, _batch_effect((filled > cut).astype(float)))
    return effect


def share_calls(bad_high: np.ndarray, bad_low: np.ndarray, n: np.ndarray | int, allowed: float,
                effect: np.ndarray, level: float, met_level: float | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(met, missed, lower, upper) for "the bad share is at most `allowed`" at one look.

    `bad_high` counts every unknown request as bad (the pessimistic count a "met" must survive),
    `bad_low` counts them good (the optimistic count a "missed" must survive); both bounds are
    one-sided over the effective sample n / effect, the lower at `level`, the upper at `met_level`
    (default `level`).
    """
    met_level = level if met_level is None else met_level
    n_eff = np.asarray(n, dtype=float) / effect
    high_hits = np.asarray(bad_high, dtype=float) / effect
    low_hits = np.asarray(bad_low, dtype=float) / effect
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = np.where(high_hits < n_eff, betaincinv(high_hits + 1.0, n_eff - high_hits, 1.0 - met_level), 1.0)
        lower = np.where(low_hits > 0, betaincinv(low_hits, n_eff - low_hits + 1.0, level), 0.0)
    empty = n_eff <= 0
    upper, lower = np.where(empty, 1.0, upper), np.where(empty, 0.0, lower)
    return upper <= allowed, lower > allowed, lower, upper


@dataclass(frozen=True)
class LookCall:
    """One look's calls for a batch of steps (arrays over steps)."""

    met: np.ndarray
    missed: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    effect: np.ndarray
    level: float
    met_level: float


def look_call(bad_sure: np.ndarray, unknown: np.ndarray, allowed: float, *, look: int, looks: int = LOOKS,
              score: np.ndarray | None = None, floor: float = -np.inf, met_error: float = ALPHA) -> LookCall:
    """Look `look` of `looks` at steps x n requests in send order: "the bad share is at most
    `allowed`" met, missed or neither. `bad_sure` are bad whatever happens, `unknown` may go
    either way; the design effect is taken with every unknown request counted bad, and with the
    pilot indicator over `score` above `floor` (`design_effect`). "Met" spends `met_error` over
    the looks, "missed" always ALPHA."""
    bad_sure = np.atleast_2d(np.asarray(bad_sure, dtype=bool))
    unknown = np.atleast_2d(np.asarray(unknown, dtype=bool))
    n = bad_sure.shape[-1]
    level = float(nominal_levels(looks)[look - 1])
    met_level = float(nominal_levels(looks, met_error)[look - 1])
    high = bad_sure | unknown
    effect = design_effect(high, score, allowed, floor)
    met, missed, lower, upper = share_calls(high.sum(axis=-1), bad_sure.sum(axis=-1), n, allowed, effect, level,
                                            met_level)
    return LookCall(met, missed, lower, upper, effect, level, met_level)
