"""The gate nights' tables: outcomes per kind with their one-sided 95% Clopper-Pearson bounds, and each night.

`benchmarks.gate_nights --summarise` prints them from the nights file; the benchmarks page quotes them.
A night is `flagged` (exit 1), `passed` (exit 0), `inconclusive` (exit 3 with a verdict) or `invalid`
(exit 3 without one: the measurement refused, for example the generator behind its schedule); it ran
`beside other work` when other processes took more cores than the quiet threshold while it ran.
"""

from __future__ import annotations

from typing import Any

from scipy.special import betaincinv

from rushhour.reports.ab.calibration import clopper_pearson_upper

__all__ = ["KINDS", "clopper_pearson_lower", "markdown", "summarise"]

KINDS = ("same", "cpu", "cpu-small", "fail-same", "fail-slow")
GOAL_POWER, GOAL_FALSE, GOAL_UNDECIDED = 0.9, 0.1, 0.2


def clopper_pearson_lower(hits: int, n: int, confidence: float = 0.95) -> float:
    """One-sided lower bound on a rate from `hits` in `n`."""
    return 0.0 if hits <= 0 or n <= 0 else float(betaincinv(hits, n - hits + 1, 1.0 - confidence))


def _outcome(night: dict[str, Any]) -> str:
    code = night["exit_code"]
    return {0: "passed", 1: "flagged"}.get(code, "invalid" if night.get("verdict") in (None, "invalid") else "inconclusive")


def summarise(nights: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind: nights, flagged, passed, inconclusive, invalid, how many ran beside other work, and
    the one-sided 95% bound that matters."""
    out: dict[str, Any] = {}
    for kind in KINDS:
        chosen = [n for n in nights if n["kind"] == kind]
        n = len(chosen)
        outcomes = [_outcome(c) for c in chosen]
        row: dict[str, Any] = {"nights": n, **{key: outcomes.count(key) for key in
                                              ("flagged", "passed", "inconclusive", "invalid")},
                               "beside_other_work": sum(bool(c.get("beside_other_work")) for c in chosen)}
        if kind in ("same", "fail-same"):
            row["false_alarm_bound"] = clopper_pearson_upper(row["flagged"], n) if n else None
        else:
            row["power_bound"] = clopper_pearson_lower(row["flagged"], n) if n else None
        out[kind] = row
    return out


def _bound(r: dict[str, Any]) -> str:
    if r.get("false_alarm_bound") is not None:
        return f"false alarms <= {100 * r['false_alarm_bound']:.1f}%"
    return f"power >= {100 * r['power_bound']:.1f}%" if r.get("power_bound") is not None else "-"


def _kinds_table(nights: list[dict[str, Any]]) -> list[str]:
    lines = ["| kind | nights | flagged (exit 1) | no regression (exit 0) | inconclusive | invalid | beside other work "
             "| one-sided 95% bound |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for kind, r in summarise(nights).items():
        lines.append(f"| {kind} | {r['nights']} | {r['flagged']} | {r['passed']} | {r['inconclusive']} | "
                     f"{r['invalid']} | {r['beside_other_work']} | {_bound(r)} |")
    return lines


def _night_row(n: dict[str, Any]) -> str:
    groups = "; ".join(f"{g['name'].split(': ')[-1]} {g['ratio_text']} {g['verdict'].replace('_', ' ')}"
                       for g in n["groups"] if g.get("compared"))
    errors = "/".join("-" if v is None else f"{100 * v:.2f}%" for v in (n.get("error_share") or {}).values())
    lag, other = n.get("lag_p99_ms"), (n.get("machine") or {}).get("other_cores")
    outcome = _outcome(n).replace("passed", "no regression")
    return (f"| {n['index']} | {n['date']} | {n['kind']} x{n['factor']:g} | {n['exit_code']} {outcome} | "
            f"{errors or '-'} | {'-' if lag is None else f'{lag:.0f}'} | {n['neighbour_cores']} | "
            f"{'-' if other is None else other} | {groups or (n['sentence'] or '-')} |")


def markdown(nights: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The page's tables: every night by kind, the nights without other work by kind, each night."""
    quiet = [n for n in nights if not n.get("beside_other_work")]
    lines = [f"Commit(s) {', '.join(sorted({n['commit'] for n in nights})) or '-'}; measured work factor of the "
             f"CPU-bound candidates (quality-node CPU per request): {meta.get('work_factor', {})}. Goal: power >= "
             f"{GOAL_POWER:g} and false alarms <= {GOAL_FALSE:g} at their one-sided 95% bounds, at most "
             f"{GOAL_UNDECIDED:.0%} of same-code nights inconclusive.", "",
             "Every night:", "", *_kinds_table(nights), "", "Nights without other work beside them:", "",
             *_kinds_table(quiet), "",
             "| night | date | kind | exit | errors baseline/candidate | lag P99 ms | neighbour cores | other cores "
             "| compared groups |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [_night_row(n) for n in nights]
    return "\n".join(lines) + "\n"
