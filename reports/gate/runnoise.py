"""Run-to-run noise of stored baseline runs, as a variance component.

Two runs of the same code taken at different times differ by more than sampling noise: the
machine's load, its neighbours and its caches were not the same. The gate models that as a
one-way random-effects model on the log scale. Run k's log P99 is

    y_k = mu + u_k + e_k,   u_k ~ N(0, tau^2) the run's own effect,  e_k its sampling noise,

so for two runs E[(y_j - y_k)^2] = 2 tau^2 + v_jk, where v_jk, the sampling variance of
y_j - y_k, comes from a bootstrap (paired over request ids when the runs replayed one schedule,
each run on its own otherwise). The method-of-moments estimate is

    tau^2 = max(0, mean over pairs of ((y_j - y_k)^2 - v_jk) / 2),

the runs' spread less what sampling alone explains; it is reported, not used to decide.

The decision uses the runs' own spread directly. Under the same code, the current run's log P
and the K baseline runs' are K + 1 draws of one law (run effect and sampling noise together), so
(y_cur - mean y_k) / (s_y sqrt(1 + 1/K)), with s_y the baseline runs' standard deviation, is
Student t with K - 1 degrees of freedom: the prediction interval for one more run. A normal
quantile on an estimated tau, as a plug-in, raised same-code false alarms from a stated 1.25% to
3.5–13% with two runs; the t quantile holds at any K, and says plainly what few runs buy: with
two runs (one degree of freedom) the band is 10–20 times the two runs' difference, so a useful
band needs five or more (MIN_USEFUL_RUNS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import special

from rushhour.reports.gate.population import beta_draws, log_ratio, paired_draws, tail

__all__ = ["MIN_USEFUL_RUNS", "RunNoise", "log_tails", "run_noise"]

NOISE_DRAWS = 400  # bootstrap draws per pair of runs: enough for a variance
MAX_NOISE_PAIRS = 45  # beyond ten runs, a random subset of the pairs
MIN_USEFUL_RUNS = 5  # fewer baseline runs leave a band too wide to find a 10-20% change


@dataclass(frozen=True)
class RunNoise:
    """The baseline runs' between-run spread of log P, beyond their sampling noise."""

    runs: int
    tau: float  # standard deviation of a run's own effect on log P
    spread: float  # observed root-mean-square of (y_j - y_k) / sqrt(2) over the pairs
    sampling: float  # root-mean-square of sqrt(v_jk / 2): what sampling alone explains

    log_tails: tuple[float, ...] = ()  # each baseline run's log P over the compared requests (finite ones)

    @property
    def comparison_sd(self) -> float:
        """Standard deviation, on the log scale, that run effects add to one night vs the baseline."""
        return self.tau * math.sqrt(1.0 + 1.0 / self.runs)

    @property
    def degrees_of_freedom(self) -> int:
        return max(len(self.log_tails) - 1, 0)

    def half_width(self, confidence: float) -> float | None:
        """Half-width on the log scale of the two-sided `confidence` prediction interval for one
        more run's log P around the baseline runs' mean (Student t, K - 1 degrees of freedom);
        None under two finite runs."""
        k = len(self.log_tails)
        if k < 2:
            return None
        side = (1.0 - confidence) / 2.0
        spread = float(np.std(self.log_tails, ddof=1))
        return float(special.stdtrit(k - 1, 1.0 - side)) * spread * math.sqrt(1.0 + 1.0 / k)

    def band(self, confidence: float) -> float | None:
        """The ratio a same-code night may show from run effects and sampling alone (one side)."""
        half = self.half_width(confidence)
        return None if half is None else float(math.exp(half))


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


def log_tails(runs: list[np.ndarray], percentile: float) -> tuple[float, ...]:
    """Each run's log P (NaN dropped); infinite ones (a run whose tail is failures) left out."""
    tails = [tail(run[~np.isnan(run)], percentile) for run in runs]
    return tuple(float(np.log(max(t, 1e-9))) for t in tails if t is not None and math.isfinite(t))


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
