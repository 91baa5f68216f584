"""Findings: the few statements that explain a verdict, computed from the results by rules.

No language model: each rule reads the summary (and, where it must, the requests and scrapes)
and says one thing with its number and time window, and where in the report it shows. In order:
which SLOs failed and where they burned their budget, which faults overlapped and what the
pools had left, where shedding began, whether the generator or the service was the limit, how
each fault recovered against what the scenario expected, and what faults did to cost. A clean
pass says so in one statement and adds only what still deserves a look.
"""

from __future__ import annotations

from typing import Any

from rushhour.reports.render.format import pct
from rushhour.reports.rundata.results import RunData
from rushhour.reports.summary.finding_rules import (
    Finding,
    calibration_findings,
    cost_findings,
    limit_findings,
    overlap_findings,
    recovery_findings,
    shedding_findings,
    slo_findings,
)

__all__ = ["Finding", "find", "headline"]


def find(run: RunData, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings of one summarised run, most important first, as summary.json dicts."""
    found = [
        *slo_findings(summary), *overlap_findings(run, summary), *shedding_findings(run, summary),
        *limit_findings(run, summary), *recovery_findings(run, summary), *cost_findings(summary),
        *calibration_findings(summary),
    ]
    items = list(found)
    if summary["verdict"] == "invalid":
        items.insert(0, Finding("verdict", "bad", summary["verdict_reason"], "#generator", "load generator"))
        if not summary["generator"]["valid"]:
            items = [f for f in items if f.rule != "limit"]
    elif summary["verdict"] == "pass":
        items = [_clean_pass(summary)] + [f for f in items if f.severity in ("bad", "warn")]
    return [f.as_dict() for f in items]


def _clean_pass(summary: dict[str, Any]) -> Finding:
    """The pass in one statement; a pass with a deviated hypothesis says so first, by name."""
    slos, generator = summary["slos"], summary["generator"]
    spent = [s for s in slos if s.get("budget_consumed") is not None]
    most = max(spent, key=lambda s: s["budget_consumed"]) if spent else None
    deviated = summary.get("deviations") or []
    implicit = " (the implicit availability objective: the scenario states none)" if summary.get("implicit_slo") else ""
    if deviated:
        noun = "hypothesis" if len(deviated) == 1 else "hypotheses"
        text = (f"Pass, {len(deviated)} {noun} deviated: {', '.join(deviated)} (the experiment's steady state "
                f"did not hold afterwards); all {len(slos)} SLO(s) met{implicit}")
    else:
        text = f"Clean pass: all {len(slos)} SLO(s) met{implicit}"
    if most is not None:
        text += f"; the most budget spent was {most['name']}'s {pct(most['budget_consumed'])}"
    if generator.get("schedule_lag_p99_ms") is not None:
        text += (f"; the generator kept up (schedule lag P99 {generator['schedule_lag_p99_ms']:.1f} ms, "
                 f"limit {generator['max_lag_p99_ms']:g} ms)")
    faults = summary["faults"]
    if faults:
        healed = sum(1 for f in faults if f["recovered"])
        text += f"; {healed} of {len(faults)} fault(s) recovered within the SLOs"
    return Finding("pass", "warn" if deviated else "good", text + ".", "#faults" if deviated else "#slos",
                   "fault table" if deviated else "SLO table", 0.0, summary["scenario"]["duration_s"])


def headline(summary: dict[str, Any]) -> str:
    """One line for the end of a drill: the verdict's reason and the finding that explains it."""
    reason = str(summary.get("verdict_reason", ""))
    found = summary.get("findings") or []
    top = next((f for f in found if f["rule"] not in ("verdict", "pass")), None)
    if summary.get("verdict") != "fail" or top is None:
        return reason
    return f"{reason} Worst: {_first_clause(top['text'])}."


def _first_clause(text: str) -> str:
    """A finding's text up to its first "; " outside parentheses ("(needs 99.0%; 9 bad)" stays whole)."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and text.startswith("; ", i):
            return text[:i].rstrip(".")
    return text.rstrip(".")

