"""Baseline comparison: is the current run's P99 really worse, or is it noise?

A regression needs both a material change (at least `min_relative_change`, 10% by default) and
evidence: the 95% bootstrap interval of the P99 difference must lie above zero. The bootstrap
draws the resampled P99 directly (the r-th of n resampled values is the empirical quantile at a
Beta(r, n-r+1) uniform order statistic), so it costs O(draws), not O(draws x n), even at a
million requests. A one-sided Mann-Whitney test is reported beside it for the whole distribution.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import mannwhitneyu

from reports.costing import compute_cost
from reports.results import ResultsError, RunData, load_run
from reports.stats import nearest_rank

MIN_RELATIVE_CHANGE = 0.10
BOOTSTRAP_DRAWS = 4000
MANN_WHITNEY_MAX = 100_000


@dataclass(frozen=True)
class Comparison:
    """The regression verdict and the side-by-side table."""

    verdict: str
    reason: str
    rows: list[dict[str, Any]]
    p99_diff_ms: float
    p99_diff_ci_ms: tuple[float, float]
    relative_change: float
    mann_whitney_p: float | None
    min_relative_change: float
    baseline_dir: str
    current_dir: str
    notes: list[str] = field(default_factory=list)

    @property
    def regression(self) -> bool:
        return self.verdict == "regression"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_runs(baseline_dir: Path, current_dir: Path, *,
                 min_relative_change: float = MIN_RELATIVE_CHANGE, seed: int = 0) -> Comparison:
    """Compare two results directories; raises ResultsError when either cannot be read."""
    return compare_loaded(load_run(Path(baseline_dir)), load_run(Path(current_dir)),
                          min_relative_change=min_relative_change, seed=seed)


def compare_loaded(baseline: RunData, current: RunData, *,
                   min_relative_change: float = MIN_RELATIVE_CHANGE, seed: int = 0) -> Comparison:
    """compare_runs for runs already in memory (build_reports has the current one loaded)."""
    base, cur = _sorted_ok_latency(baseline), _sorted_ok_latency(current)
    rng = np.random.default_rng(seed)
    diffs = _bootstrap_p99(cur, rng) - _bootstrap_p99(base, rng)
    low, high = (float(v) for v in np.quantile(diffs, [0.025, 0.975]))
    p99_base, p99_cur = _p(base, 99), _p(cur, 99)
    relative = (p99_cur - p99_base) / p99_base if p99_base > 0 else float("inf")
    regression = relative >= min_relative_change and low > 0
    reason = (f"P99 {p99_base:.1f} -> {p99_cur:.1f} ms ({100 * relative:+.1f}%, "
              f"95% CI of the difference [{low:.1f}, {high:.1f}] ms): "
              + ("a regression beyond noise." if regression else _why_not(relative, low, min_relative_change)))
    return Comparison(
        verdict="regression" if regression else "no_regression", reason=reason,
        rows=_rows(baseline, current, base, cur), p99_diff_ms=p99_cur - p99_base,
        p99_diff_ci_ms=(low, high), relative_change=relative,
        mann_whitney_p=_mann_whitney(cur, base, rng), min_relative_change=min_relative_change,
        baseline_dir=str(baseline.root), current_dir=str(current.root),
        notes=_notes(baseline, current),
    )


def _why_not(relative: float, low: float, minimum: float) -> str:
    if relative < minimum:
        return f"below the {100 * minimum:.0f}% minimum change, no regression."
    return "the interval includes zero, so the change is within noise; no regression."


def _sorted_ok_latency(run: RunData) -> np.ndarray:
    latency = run.requests["latency_ms"].to_numpy()[run.requests["ok"].to_numpy()]
    latency = np.sort(latency[~np.isnan(latency)])
    if latency.size == 0:
        raise ResultsError(f'"{run.root / "requests.parquet"}" has no ok request with a latency to compare.')
    return latency


def _p(ordered: np.ndarray, percentile: float) -> float:
    return float(ordered[nearest_rank(percentile, ordered.size) - 1])


def _bootstrap_p99(ordered: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """P99 of BOOTSTRAP_DRAWS resamples, drawn via the Beta law of the r-th order statistic."""
    n = ordered.size
    rank = nearest_rank(99.0, n)
    uniform = rng.beta(rank, n - rank + 1, BOOTSTRAP_DRAWS)
    index = np.clip(np.ceil(uniform * n).astype(np.int64), 1, n) - 1
    return ordered[index]


def _mann_whitney(current: np.ndarray, baseline: np.ndarray, rng: np.random.Generator) -> float | None:
    """One-sided p-value that current latencies tend to exceed baseline ones (subsampled)."""
    if current.size < 2 or baseline.size < 2:
        return None
    sample = [x if x.size <= MANN_WHITNEY_MAX else rng.choice(x, MANN_WHITNEY_MAX, replace=False)
              for x in (current, baseline)]
    return float(mannwhitneyu(sample[0], sample[1], alternative="greater", method="asymptotic").pvalue)


def _rows(baseline: RunData, current: RunData, base: np.ndarray, cur: np.ndarray) -> list[dict[str, Any]]:
    rows = [_row(f"P{p} latency (ms)", _p(base, p), _p(cur, p)) for p in (50, 95, 99)]
    rows.append(_row("cost per 1k chars (USD)", _cost_per_1k(baseline), _cost_per_1k(current)))
    rows.append(_row("ok share", float(baseline.requests["ok"].mean()), float(current.requests["ok"].mean())))
    return rows


def _row(metric: str, baseline: float | None, current: float | None) -> dict[str, Any]:
    change = (current - baseline) / baseline if baseline and current is not None else None
    return {"metric": metric, "baseline": baseline, "current": current, "change": change}


def _cost_per_1k(run: RunData) -> float | None:
    return compute_cost(run.requests, run.metrics, run.scenario.cost, [])["usd_per_1k_chars"]


def _notes(baseline: RunData, current: RunData) -> list[str]:
    notes = []
    if baseline.scenario.seed != current.scenario.seed:
        notes.append(f"Seeds differ ({baseline.scenario.seed} vs {current.scenario.seed}); "
                     "the runs replay different schedules.")
    if baseline.scenario.name != current.scenario.name:
        notes.append(f'Scenarios differ ("{baseline.scenario.name}" vs "{current.scenario.name}").')
    return notes
