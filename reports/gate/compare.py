"""Baseline comparison: is the current run's P99 worse than stored runs of the baseline code?

Stored baselines (`rushhour compare`, `rushhour report --baseline`) are kept for history and
trends. Runs taken at different times cannot separate the machine's load from the code, so the
nightly gate measures both versions side by side with `rushhour ab`; this comparison says so. When
every run replayed the same schedule (a same-seed rerun), the comparison is paired request by
request; otherwise each run is resampled on its own. The population, statistics and noise model
are in rushhour.reports.gate.population, the decision and its explanation in rushhour.reports.gate.decision; this module pairs the
runs, decides per group and builds the side-by-side table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import ConfigDict

from rushhour.kernel.contract import REQUEST_COLUMNS
from rushhour.reports.estimate.intervals import min_samples
from rushhour.reports.gate.baselines import ScheduleMismatch, load_baselines, schedule_difference
from rushhour.reports.gate.decision import GateDecision, GroupVerdict, explain
from rushhour.reports.gate.judge import group_confidence, judge_groups, verdict_reason
from rushhour.reports.gate.population import DEFAULT_POPULATION, GatePopulation, tail
from rushhour.reports.measures.cost import compute_cost
from rushhour.reports.rundata.attempts import gate_values
from rushhour.reports.rundata.results import ResultsError, RunData, load_run
from rushhour.reports.rundata.window import schedule_window

__all__ = ["GATE_METRICS", "Comparison", "compare_loaded", "compare_runs", "explain_comparison"]

MIN_RELATIVE_CHANGE = 0.10
GATE_METRICS = tuple(name for name in REQUEST_COLUMNS if name.endswith("_ms"))
"""The requests.parquet columns a regression can be judged on: times in milliseconds, where
higher is worse and a failed request counts as infinitely slow (not status codes or counts)."""


@dataclass(frozen=True)
class Comparison:
    """The regression verdict, the gate's decision and the side-by-side table; summary.json's
    `comparison` is validated against these fields and the decision's (a misspelt key is refused)."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    verdict: str
    reason: str
    rows: list[dict[str, Any]]
    decision: GateDecision
    min_relative_change: float
    baseline_dir: str
    baseline_dirs: list[str]
    current_dir: str
    notes: list[str] = field(default_factory=list)

    @property
    def regression(self) -> bool:
        return self.verdict == "regression"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_runs(baseline: Path | Sequence[Path], current_dir: Path, *,
                 min_relative_change: float = MIN_RELATIVE_CHANGE, paired: bool | None = None,
                 population: GatePopulation = DEFAULT_POPULATION, seed: int = 0) -> Comparison:
    """Compare a baseline (one run, a directory of runs, or several) with the current run.

    paired: None pairs when every schedule matches, True insists (ScheduleMismatch otherwise),
    False never pairs. Raises ResultsError (ScheduleMismatch is one) on unusable input.
    """
    return compare_loaded(load_baselines(baseline), load_run(Path(current_dir)),
                          min_relative_change=min_relative_change, paired=paired,
                          population=population, seed=seed)


def compare_loaded(baseline: RunData | Sequence[RunData], current: RunData, *,
                   min_relative_change: float = MIN_RELATIVE_CHANGE, paired: bool | None = None,
                   population: GatePopulation = DEFAULT_POPULATION, seed: int = 0) -> Comparison:
    """compare_runs for runs already in memory (build_reports has the current one loaded)."""
    baselines = [baseline] if isinstance(baseline, RunData) else list(baseline)
    is_paired, pairing = _pairing(baselines, current, paired)
    groups = judge_groups(baselines, current, paired=is_paired, population=population,
                          min_change=min_relative_change, rng=np.random.default_rng(seed))
    judged = [g for g in groups if g.skipped is None]
    if not judged:
        raise ResultsError(f"No group of the gate population ({population.describe()}) has the "
                           f"{min_samples(population.percentile)} attempted requests a "
                           f"P{population.percentile:g} needs in both runs.")
    regressed = any(g.regression for g in judged)
    decision = GateDecision(
        verdict="regression" if regressed else "no_regression",
        reason=verdict_reason(judged, population.percentile, regressed), paired=is_paired,
        pairing=pairing, population=population.describe(), percentile=population.percentile,
        confidence=group_confidence(len(judged)), min_relative_change=min_relative_change,
        baseline_runs=[str(run.root) for run in baselines], current_run=str(current.root), groups=groups,
    )
    return Comparison(
        verdict=decision.verdict, reason=decision.reason,
        rows=_rows(baselines, current, groups, population.percentile), decision=decision, min_relative_change=min_relative_change,
        baseline_dir=str(baselines[0].root), baseline_dirs=decision.baseline_runs,
        current_dir=str(current.root), notes=_notes(baselines[0], current),
    )


def explain_comparison(comparison: Comparison | dict[str, Any]) -> str:
    """What `rushhour compare` prints: the side-by-side table, notes, then why it decided."""
    c = comparison.as_dict() if isinstance(comparison, Comparison) else comparison
    lines = [f"{'metric':<30}{'baseline':>14}{'current':>14}{'change':>10}"]
    lines += [f"{row['metric']:<30}{_sig(row['baseline']):>14}{_sig(row['current']):>14}"
              f"{_change(row['change']):>10}" for row in c["rows"]]
    lines += [f"note: {note}" for note in c["notes"]]
    lines.append(explain(c["decision"]))
    return "\n".join(lines)


def _pairing(baselines: list[RunData], current: RunData, paired: bool | None) -> tuple[bool, str]:
    if paired is False:
        return False, "an unpaired comparison was asked for"
    difference = next(filter(None, (schedule_difference(baselines[0], run)
                                    for run in [*baselines[1:], current])), None)
    if difference is None:
        return True, (f"every run replayed the same schedule of {len(current.requests):,} requests, "
                      "so each request is compared with itself")
    if paired:
        raise ScheduleMismatch(f"A paired comparison needs runs that replayed the same schedule, but {difference} "
                               "Rerun with the baseline's seed and traffic model, or compare unpaired.")
    return False, f"the schedules differ, so each run is resampled on its own: {difference}"


def _rows(baselines: list[RunData], current: RunData, groups: list[GroupVerdict],
          percentile: float) -> list[dict[str, Any]]:
    base = np.concatenate([gate_values(run.requests) for run in baselines])
    cur = gate_values(current.requests)
    rows = [_row(f"P{p} latency, failed = ∞ (ms)", tail(base, p), tail(cur, p)) for p in (50, 95, 99)]
    rows += _stream_rows(baselines, current)
    rows += [_row(f"gate {g.group}: P{percentile:g} (ms)", g.p_baseline_ms, g.p_current_ms) for g in groups]
    rows.append(_row("cost per 1k chars served (USD)", _cost_per_1k(baselines[0]), _cost_per_1k(current)))
    ok_share = float(np.mean([run.requests["ok"].mean() for run in baselines]))
    rows.append(_row("ok share", ok_share, float(current.requests["ok"].mean())))
    return rows


def _stream_rows(baselines: list[RunData], current: RunData) -> list[dict[str, Any]]:
    """P50/P99 of TTFT and TPOT side by side, when both sides streamed."""
    runs = [*baselines, current]
    if not all(run.requests["ttft_ms"].notna().any() for run in runs):
        return []
    rows = []
    for column, label in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT")):
        base = np.concatenate([gate_values(run.requests, column) for run in baselines])
        cur = gate_values(current.requests, column)
        rows += [_row(f"P{p} {label} (ms)", tail(base, p), tail(cur, p)) for p in (50, 99)]
    return rows


def _row(metric: str, baseline: float | None, current: float | None) -> dict[str, Any]:
    change = None
    if baseline is not None and current is not None and 0 < baseline < np.inf:
        change = (current - baseline) / baseline
    return {"metric": metric, "baseline": baseline, "current": current, "change": change}


def _cost_per_1k(run: RunData) -> float | None:
    return compute_cost(run.requests, run.metrics, run.scenario.cost, [],
                        window=schedule_window(run))["usd_per_1k_chars"]


def _sig(value: float | None) -> str:
    from rushhour.reports.render.pages import format_sig

    return format_sig(value)


def _change(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f}%"


def _notes(baseline: RunData, current: RunData) -> list[str]:
    notes = []
    if baseline.scenario.seed != current.scenario.seed:
        notes.append(f"Seeds differ ({baseline.scenario.seed} vs {current.scenario.seed}); "
                     "the runs replay different schedules.")
    if baseline.scenario.name != current.scenario.name:
        notes.append(f'Scenarios differ ("{baseline.scenario.name}" vs "{current.scenario.name}").')
    return notes
