"""Is one run's share of bad requests higher than other runs'? A test that holds when bad
requests come in bursts, and when the share itself moves from run to run.

Failures through a service are not independent: a restarting node fails every request for ten
seconds, then none. Counted one request at a time (a Fisher exact test on the counts) a single
burst looks like overwhelming evidence, and same-code runs were measured raising false alarms at
16–32% where 5% was stated. Here each run's bad-request indicator, in time order, is cut into
blocks (batch means, rushhour.reports.estimate.blocks), and the largest design effect among the
runs divides every count (runs laid end to end would count the step between two runs' levels as
correlation), so the Fisher exact test sees as many requests as the runs hold
independent evidence for (the Rao–Scott idea applied to time blocks).

With two or more baseline runs the share also varies from run to run (a noisy neighbour, a
different node placement), which no count inside a run can see. Then a second, run-level test
must reject too: the current share against the baseline runs' mean, in units of their spread
times sqrt(1 + 1/K), on Student t with K - 1 degrees of freedom (the prediction interval for one
more run). Both must reject (an intersection–union test), so the error stays at or under alpha.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

from rushhour.reports.estimate.blocks import dependence

__all__ = ["ShareIncrease", "share_increase"]

BLOCKS_METHOD = "Fisher exact test on counts divided by the design effect (batch means over time)"
RUNS_METHOD = "and Student t on the baseline runs' shares (prediction for one more run)"


@dataclass(frozen=True)
class ShareIncrease:
    """The one-sided p-value that the current share is higher, the design effect charged, the
    counts the test saw (effective requests), and the method in words."""

    p_value: float
    design_effect: float
    effective_current: float
    effective_baseline: float
    runs_p_value: float | None
    method: str

    def as_dict(self) -> dict[str, float | str | None]:
        return asdict(self)


def share_increase(current: np.ndarray, baselines: list[np.ndarray], confidence: float = 0.95) -> ShareIncrease:
    """Test current share > baseline share; each array is one run's bad indicator (bool) in time
    order. Raises ValueError when a run is empty."""
    if not current.size or not baselines or any(not run.size for run in baselines):
        raise ValueError("A share test needs at least one request in the current run and in every baseline run.")
    runs = [current.astype(float), *(run.astype(float) for run in baselines)]
    design = max(max(1.0, dependence(run, confidence).design_effect) for run in runs)
    bad_cur, n_cur = float(runs[0].sum()) / design, current.size / design
    bad_base = sum(float(run.sum()) for run in runs[1:]) / design
    n_base = sum(run.size for run in runs[1:]) / design
    p_value = _fisher_greater(bad_cur, n_cur, bad_base, n_base)
    runs_p = _runs_p_value(float(runs[0].mean()), np.array([run.mean() for run in runs[1:]]))
    method = BLOCKS_METHOD if runs_p is None else f"{BLOCKS_METHOD} {RUNS_METHOD}"
    return ShareIncrease(max(p_value, runs_p or 0.0), design, n_cur, n_base, runs_p, method)


def _fisher_greater(bad_cur: float, n_cur: float, bad_base: float, n_base: float) -> float:
    """One-sided Fisher exact p-value on counts rounded to whole requests."""
    from scipy.stats import fisher_exact  # here: `scipy.stats` costs half a second to import

    a, b = round(bad_cur), round(bad_base)
    n_a, n_b = max(round(n_cur), a), max(round(n_base), b)
    if n_a == 0 or n_b == 0:
        return 1.0
    table = np.array([[a, n_a - a], [b, n_b - b]])
    return float(fisher_exact(table, alternative="greater").pvalue)


def _runs_p_value(current: float, shares: np.ndarray) -> float | None:
    """One-sided t p-value of one more run's share above K runs' mean; None under two runs or
    when the runs' shares do not vary (nothing to scale by)."""
    k = shares.size
    if k < 2:
        return None
    spread = float(shares.std(ddof=1))
    if spread <= 0.0:
        return None
    t = (current - float(shares.mean())) / (spread * math.sqrt(1.0 + 1.0 / k))
    return float(special.stdtr(k - 1, -t))
