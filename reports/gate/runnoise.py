"""Run-to-run noise of stored baseline runs, as a variance component.

Two runs of the same code taken at different times differ by more than sampling noise: the
machine's load, its neighbours and its caches were not the same. The gate models that as a
one-way random-effects model on the log scale. Run k's log P99 is

    y_k = mu + u_k + e_k,   u_k ~ N(0, tau^2) the run's own effect,  e_k its sampling noise,

so for two runs E[(y_j - y_k)^2] = 2 tau^2 + v_jk, where v_jk, the sampling variance of
y_j - y_k, comes from a bootstrap (paired over request ids when the runs replayed one schedule,
each run on its own otherwise). The method-of-moments estimate is

    tau^2 = max(0, mean over pairs of ((y_j - y_k)^2 - v_jk) / 2),

the runs' spread less what sampling alone explains. A night compared with the geometric mean of
K baseline runs carries its own run effect and the mean's, a variance of tau^2 (1 + 1/K); the
gate adds that once, to the bootstrap distribution of the ratio, and never again as a threshold.
With few runs tau itself is uncertain (two runs give one degree of freedom); the output says how
many runs it came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy.special import ndtri

from rushhour.reports.gate.population import beta_draws, log_ratio, paired_draws, tail

__all__ = ["RunNoise", "run_noise", "widen"]

NOISE_DRAWS = 400  # bootstrap draws per pair of runs: enough for a variance
MAX_NOISE_PAIRS = 45  # beyond ten runs, a random subset of the pairs


@dataclass(frozen=True)
class RunNoise:
    """The baseline runs' between-run spread of log P, beyond their sampling noise."""

    runs: int
    tau: float  # standard deviation of a run's own effect on log P
    spread: float  # observed root-mean-square of (y_j - y_k) / sqrt(2) over the pairs
    sampling: float  # root-mean-square of sqrt(v_jk / 2): what sampling alone explains

    @property
    def comparison_sd(self) -> float:
        """Standard deviation, on the log scale, that run effects add to one night vs the baseline."""
        return self.tau * math.sqrt(1.0 + 1.0 / self.runs)

    def band(self, confidence: float) -> float:
        """The ratio a same-code night may show from run effects alone (one side, `confidence`)."""
        side = (1.0 - confidence) / 2.0
        return float(math.exp(ndtri(1.0 - side) * self.comparison_sd))


def run_noise(baselines: list[np.ndarray], percentile: float, paired: bool, rng: np.random.Generator,
              draws: int = NOISE_DRAWS) -> RunNoise | None:
    """The variance component of two or more baseline runs; None with fewer, or when no pair of
    runs has a finite percentile (their tail is all failures).

    Paired: each array holds the same requests in the same order (NaN where a run did not attempt
    one), and only requests both runs attempted count.
    """
    if len(baselines) < 2:
        return None
    pairs = list(combinations(range(len(baselines)), 2))
    if len(pairs) > MAX_NOISE_PAIRS:
        pairs = [pairs[i] for i in rng.choice(len(pairs), MAX_NOISE_PAIRS, replace=False)]
    found = [_pair(baselines[j], baselines[k], percentile, paired, rng, draws) for j, k in pairs]
    known = np.array([pair for pair in found if pair is not None])
    if not known.size:
        return None
    squared, variance = known[:, 0], known[:, 1]
    return RunNoise(runs=len(baselines), tau=math.sqrt(max(0.0, float(np.mean(squared - variance)) / 2.0)),
                    spread=math.sqrt(float(np.mean(squared)) / 2.0),
                    sampling=math.sqrt(float(np.mean(variance)) / 2.0))


def _pair(first: np.ndarray, second: np.ndarray, percentile: float, paired: bool, rng: np.random.Generator,
          draws: int) -> tuple[float, float] | None:
    """((y_j - y_k)^2, v_jk) for one pair of runs, None when either percentile is not finite."""
    if paired:
        keep = ~np.isnan(first) & ~np.isnan(second)
        first, second = first[keep], second[keep]
    else:
        first, second = first[~np.isnan(first)], second[~np.isnan(second)]
    top_a, top_b = tail(first, percentile), tail(second, percentile)
    if top_a is None or top_b is None or not math.isfinite(top_a) or not math.isfinite(top_b):
        return None
    if paired:
        resampled = paired_draws(second, first, percentile, rng, draws)
    else:
        resampled = log_ratio(beta_draws(np.sort(first), percentile, rng, draws),
                              beta_draws(np.sort(second), percentile, rng, draws))
    finite = resampled[np.isfinite(resampled)]
    variance = float(np.var(finite)) if finite.size > 1 else 0.0
    return float(log_ratio(top_a, top_b)) ** 2, variance


def widen(log_ratios: np.ndarray, noise: RunNoise | None, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of the log ratio with the run effects' variance added (once)."""
    if noise is None or noise.tau == 0.0:
        return log_ratios
    return log_ratios + rng.normal(0.0, noise.comparison_sd, log_ratios.size)
