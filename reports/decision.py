"""The gate's decision as an object that can explain itself, and its rendering as text.

A group regresses when its P ratio (current over baseline) reaches the threshold, the larger of
1 + the minimum change and the baselines' own noise band, and its interval lies above 1 (the
rise is beyond sampling noise). The verdict is a regression when any judged group regresses;
the intervals are Bonferroni-widened for the number of groups, so more groups do not mean more
false alarms.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["GateDecision", "GroupVerdict", "explain"]


@dataclass(frozen=True)
class GroupVerdict:
    """One group of the gate population: counts, the two percentiles, ratio, interval, verdict."""

    group: str
    samples_baseline: int
    samples_current: int
    pairs: int | None
    failed_baseline: int
    failed_current: int
    p_baseline_ms: float | None
    p_current_ms: float | None
    ratio: float | None
    ci: tuple[float, float] | None
    noise_band: float | None
    threshold: float
    regression: bool
    skipped: str | None = None


@dataclass(frozen=True)
class GateDecision:
    """Everything the gate decided and why; `explain` renders it for the CLI and the report."""

    verdict: str
    reason: str
    paired: bool
    pairing: str
    population: str
    percentile: float
    confidence: float
    min_relative_change: float
    baseline_runs: list[str]
    current_run: str
    groups: list[GroupVerdict]

    @property
    def regression(self) -> bool:
        return self.verdict == "regression"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def explain(decision: GateDecision | dict[str, Any]) -> str:
    """The decision as plain text: what was compared, how, every group's numbers, the verdict."""
    d = decision.as_dict() if isinstance(decision, GateDecision) else decision
    runs = d["baseline_runs"]
    noise = ("run-to-run noise measured from the baseline runs against each other" if len(runs) > 1
             else "one baseline run: run-to-run noise is not modelled, only sampling noise")
    lines = [
        f"Population: {d['population']}.",
        f"Paired: {'yes' if d['paired'] else 'no'} ({d['pairing']}).",
        f"Baseline: {len(runs)} run(s) ({', '.join(runs)}); {noise}.",
        f"Current: {d['current_run']}.",
        (f"A group regresses when P{d['percentile']:g} current/baseline >= its threshold (the larger of "
         f"1 + {100 * d['min_relative_change']:g}% and the noise band) and its "
         f"{100 * d['confidence']:.1f}% interval lies above 1."),
        (f"{'group':<14}{'n base':>8}{'n cur':>7}{'pairs':>7}{'failed b/c':>12}{'P base ms':>11}"
         f"{'P cur ms':>10}{'ratio':>8}{'interval':>17}{'noise':>7}{'thresh':>8}  verdict"),
    ]
    lines += [_group_line(group) for group in d["groups"]]
    lines.append(f"{d['verdict'].replace('_', ' ').upper()}: {d['reason']}")
    return "\n".join(lines)


def _group_line(g: dict[str, Any]) -> str:
    ci = f"[{g['ci'][0]:.3f}, {g['ci'][1]:.3f}]" if g["ci"] else "—"
    verdict = g["skipped"] or ("REGRESSION" if g["regression"] else "ok")
    return (f"{g['group']:<14}{g['samples_baseline']:>8}{g['samples_current']:>7}"
            f"{_int(g['pairs']):>7}{g['failed_baseline']:>6}/{g['failed_current']:<5}"
            f"{_num(g['p_baseline_ms'], 1):>11}{_num(g['p_current_ms'], 1):>10}{_num(g['ratio'], 3):>8}"
            f"{ci:>17}{_num(g['noise_band'], 3):>7}{g['threshold']:>8.3f}  {verdict}")


def _num(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _int(value: int | None) -> str:
    return "—" if value is None else str(value)
