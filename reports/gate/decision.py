"""The gate's decision as an object that can explain itself, and its rendering as text.

A group regresses when its P ratio (current over baseline) reaches 1 + the minimum change and
its interval lies above 1, or when it fails significantly more often (rushhour.reports.gate.failshare). The
interval holds the sampling noise and, with several baseline runs, their run-to-run spread on
Student t (rushhour.reports.gate.runnoise): noise is
counted there once, not again in the threshold. The
verdict is a regression when any judged group regresses; the tests are Bonferroni-adjusted for
the number of groups, so more groups do not mean more false alarms.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from pydantic import ConfigDict

from rushhour.reports.gate.failshare import MIN_FAILURE_SHARE_CHANGE
from rushhour.reports.gate.runnoise import MIN_USEFUL_RUNS

__all__ = ["ONE_RUN", "SEPARATE_TIMES", "GateDecision", "GroupVerdict", "explain"]

ONE_RUN = ("one baseline run: the interval holds the spread of the two runs' ratio over 8 time sections "
           "(4 to 7 in a shorter run; Student t on one fewer degrees of freedom), which covers sampling and the "
           "requests' dependence; a run's own effect (a noisy neighbour, another placement) one run cannot show, "
           "so that needs two or more baseline runs")
SEPARATE_TIMES = ("Runs taken at different times cannot separate the machine's load from the code: "
                  "this comparison is kept for history and trends. To decide whether a change is slower, "
                  "measure both versions side by side in one run with `rushhour ab`.")


@dataclass(frozen=True)
class GroupVerdict:
    """One group of the gate population: counts, the two percentiles, ratio, interval, verdict."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

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
    run_noise_sd: float | None = None  # tau: a run's own effect on log P, beyond sampling noise
    latency_regression: bool = False
    failure_share_baseline: float | None = None
    failure_share_current: float | None = None
    failure_p_value: float | None = None
    failure_regression: bool = False
    note: str | None = None
    method: str | None = None  # how the ratio's interval was built
    noise_df: int | None = None  # degrees of freedom of the run-to-run t (baseline runs - 1)
    bootstrap_blocks: int | None = None  # blocks of consecutive requests the bootstrap resamples
    failure_method: str | None = None
    failure_design_effect: float | None = None
    failure_effective_current: float | None = None  # the current run's requests over that design effect


@dataclass(frozen=True)
class GateDecision:
    """Everything the gate decided and why; `explain` renders it for the CLI and the report."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

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
    noise = (f"run-to-run noise from the baseline runs' own spread, on Student t with {len(runs) - 1} degree(s) "
             "of freedom" + ("" if len(runs) >= MIN_USEFUL_RUNS else
                             f" (fewer than {MIN_USEFUL_RUNS} runs: a wide band, only large changes can show)")
             if len(runs) > 1 else ONE_RUN)
    lines = [
        SEPARATE_TIMES,
        f"Population: {d['population']}.",
        f"Paired: {'yes' if d['paired'] else 'no'} ({d['pairing']}).",
        f"Baseline: {len(runs)} run(s) ({', '.join(runs)}); {noise}.",
        f"Current: {d['current_run']}.",
        (f"A group regresses when P{d['percentile']:g} current/baseline >= x{1 + d['min_relative_change']:.2f} "
         f"and its {100 * d['confidence']:.1f}% interval (the bootstrap over requests, and with several baseline "
         f"runs at least the t prediction interval of one more run) "
         f"lies above 1, or when its failure share is significantly higher (tested on blocks of time, by at least "
         f"{100 * MIN_FAILURE_SHARE_CHANGE:g} points). "
         "A failed request counts as infinitely slow."),
        (f"{'group':<14}{'n base':>8}{'n cur':>7}{'pairs':>7}{'failed b/c':>12}{'P base ms':>11}"
         f"{'P cur ms':>10}{'ratio':>8}{'interval':>17}{'noise':>7}{'thresh':>8}  verdict"),
    ]
    lines += [_group_line(group) for group in d["groups"]]
    lines += [f"{g['group']}: {g['note']}" for g in d["groups"] if g.get("note")]
    lines += [f"{g['group']}: interval by {g['method']}; {_effective(g)}" for g in d["groups"] if g.get("method")]
    lines.append(f"{d['verdict'].replace('_', ' ').upper()}: {d['reason']}")
    return "\n".join(lines)


def _group_line(g: dict[str, Any]) -> str:
    ci = f"[{g['ci'][0]:.3f}, {g['ci'][1]:.3f}]" if g["ci"] else "—"
    verdict = g["skipped"] or _group_verdict(g)
    return (f"{g['group']:<14}{g['samples_baseline']:>8}{g['samples_current']:>7}"
            f"{_int(g['pairs']):>7}{g['failed_baseline']:>6}/{g['failed_current']:<5}"
            f"{_num(g['p_baseline_ms'], 1):>11}{_num(g['p_current_ms'], 1):>10}{_num(g['ratio'], 3):>8}"
            f"{ci:>17}{_num(g['noise_band'], 3):>7}{g['threshold']:>8.3f}  {verdict}")


def _group_verdict(g: dict[str, Any]) -> str:
    causes = [cause for cause, hit in (("P", g.get("latency_regression")), ("failures", g.get("failure_regression")))
              if hit]
    return f"REGRESSION ({', '.join(causes)})" if causes else ("REGRESSION" if g["regression"] else "ok")


def _effective(g: dict[str, Any]) -> str:
    runs = "" if g.get("noise_df") is None else f"{g['noise_df'] + 1} baseline runs behind the band; "
    blocks = "" if g.get("bootstrap_blocks") is None else f"{g['bootstrap_blocks']:,} blocks resampled; "
    return (f"{runs}{blocks}failures tested at a design effect of {g.get('failure_design_effect') or 1.0:.1f} "
            f"(blocks of time), {g.get('failure_effective_current') or 0:,.0f} effective requests in the current run")


def _num(value: float | None, digits: int) -> str:
    if value is None:
        return "—"
    return "∞" if value == float("inf") else f"{value:.{digits}f}"


def _int(value: int | None) -> str:
    return "—" if value is None else str(value)
