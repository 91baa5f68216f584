"""Steps and searches as the plain data of capacity.json (no files written here).

A step entry carries the rate offered and achieved, P50/P95/P99 with 95% intervals, error and
shed rates, each SLO's decision, the generator's health, and, where the target has
`/v1/status`, utilisation per pool and the cost per 1k characters at that rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.measures.cost import compute_cost
from rushhour.reports.schema import CostModel
from rushhour.scenarios.capacity.job import RETRY_MARGIN, evidence_window_s
from rushhour.scenarios.capacity.search import GENERATOR, SearchResult, StepVerdict
from rushhour.scenarios.capacity.stepper import StepRecord
from rushhour.scenarios.capacity.steps import THROUGHPUT, StepRules

__all__ = ["condition_entry", "pool_usage", "step_entry", "verdict_of"]


def verdict_of(record: StepRecord) -> StepVerdict:
    """What the search needs to know of a step. A failure on an SLO that none of its calls showed
    missed is open (too little evidence either way), which the search may step once more; a step
    cut short because the bad requests it already holds rule out a pass (`steps.curtailed`) is
    not, since its final look would most likely have shown the SLO missed. An open step carries the
    window its rate would need to show the SLO met at the clustering it measured (`evidence_s`),
    which a retry may plan by."""
    assessment = record.assessment
    verdict = assessment.decision if assessment.decision in ("pass", "fail", "invalid") else "fail"
    limiting = next((call for call in assessment.calls if call.name == assessment.limiting), None)
    unclear = (verdict == "fail" and assessment.limiting not in (THROUGHPUT, GENERATOR) and limiting is not None
               and not any(call.decision == "missed" for call in assessment.calls)
               and not (record.early and limiting.bad > 0))
    evidence = None
    if unclear and limiting is not None:
        start, end = record.rules.window
        evidence = evidence_window_s(limiting.samples, limiting.design_effect, limiting.needed,
                                     min(assessment.now_s, end) - start)
    return StepVerdict(record.rate_rps, verdict, assessment.limiting, assessment.reason, open=unclear,
                       evidence_s=evidence)


def pool_usage(samples: pd.DataFrame, window: tuple[float, float], slots_per_node: dict[str, int]) -> dict[str, Any]:
    """Per pool over the window: nodes alive, busy slots, queue and utilisation (busy / slots)."""
    if samples.empty:
        return {}
    inside = samples[(samples["t_s"] >= window[0]) & (samples["t_s"] <= window[1])]
    if inside.empty:
        inside = samples
    means = inside.groupby("pool")[["nodes_alive", "nodes_ready", "slots_busy", "queue_depth"]].mean()
    usage: dict[str, Any] = {}
    for pool, row in means.iterrows():
        slots = slots_per_node.get(str(pool), 0) * float(row["nodes_ready"])
        usage[str(pool)] = {
            "nodes_alive": round(float(row["nodes_alive"]), 2), "slots_busy": round(float(row["slots_busy"]), 2),
            "queue_depth": round(float(row["queue_depth"]), 2),
            "utilisation": round(min(float(row["slots_busy"]) / slots, 1.0), 3) if slots > 0 else None,
        }
    return usage


def _cost(record: StepRecord, window: tuple[float, float], model: CostModel | None) -> dict[str, Any] | None:
    if model is None or record.samples.empty:
        return None
    intended = record.requests["intended_s"].to_numpy()
    inside = record.requests[(intended >= window[0]) & (intended < window[1])]
    metrics = record.samples[["t_s", "pool", "nodes_alive"]]
    cost = compute_cost(inside, metrics, model, [], window=window)
    return {key: cost.get(key) for key in ("known", "usd_per_1k_chars", "usd_per_1k_chars_computed", "total_usd",
                                           "chars", "reason")}


def step_entry(record: StepRecord, *, rules: StepRules, slots_per_node: dict[str, int],
               cost_model: CostModel | None, settle_s: float = 0.0) -> dict[str, Any]:
    """One entry of `steps` in capacity.json. Where the step's time went: `warmup_s` and
    `measured_s` of its own clock, `wall_s` from its schedule to its end (the load generator's start
    and stop included), and `settle_s` waited before it for the target to drain. A step that went
    on with a passing step's load (`continues`, that step's index) spent no time on warm-up;
    `planned_s` is the window it was planned to measure (the retry of an open step's is longer)."""
    a = record.assessment
    figures = a.figures
    start, end = rules.window
    window = (start, max(start, min(a.now_s, end)))
    return {
        "index": record.index, "offered_rps": round(record.rate_rps, 3),
        "offered_measured_rps": _round(figures.get("offered_rps")), "achieved_rps": _round(figures.get("achieved_rps")),
        "achieved_share": _round(figures.get("achieved_share"), 4),
        "latency_ms": figures.get("latency_ms", {}), "goodput_rps": _round(figures.get("goodput_rps")),
        **{key: figures[key] for key in ("ttft_ms", "tpot_ms") if key in figures},
        "error_rate": figures.get("error_rate"),
        "shed_rate": figures.get("shed_rate"), "requests": figures.get("requests"),
        "passed": a.decision == "pass", "verdict": a.decision if a.decision != "continue" else "fail",
        "limiting": a.limiting, "reason": a.reason, "early": record.early,
        "continues": record.continues,
        "warmup_s": 0.0 if record.continues else round(min(start, a.now_s), 2),
        "measured_s": round(window[1] - window[0], 2),
        "planned_s": rules.measure_s,
        "wall_s": round(record.wall_s, 2), "settle_s": round(settle_s, 2),
        "slos": [call.as_dict() for call in a.calls],
        "generator": {key: figures.get(key) for key in ("lag_p99_ms", "pool_wait_p99_ms", "duplicates", "cpu_max")}
        | {"valid": a.generator_valid},
        "pools": pool_usage(record.samples, window, slots_per_node),
        "cost": _cost(record, window, cost_model),
        "dir": record.work_dir.name,
    }


def _round(value: object, digits: int = 3) -> float | None:
    return round(float(value), digits) if isinstance(value, (int, float)) and np.isfinite(value) else None


def _text(result: SearchResult, require_rps: float | None) -> str:
    if result.generator_bound:
        floor = f"{result.last_pass:.1f}" if result.last_pass is not None else "0"
        return f">= {floor} req/s, generator-bound: the load generator reached its limit before the service did"
    if result.below_min:
        return f"< {result.first_fail:.1f} req/s: even the lowest rate tried failed"
    if result.ceiling:
        return f">= {result.last_pass:.1f} req/s: every rate up to --max-rps passed"
    if result.last_pass is None or result.first_fail is None:  # interrupted before a bracket
        return "not measured: the search stopped before it bracketed the capacity"
    limited = "the load generator" if result.limiting == GENERATOR else result.limiting
    known = result.known_fail is not None and result.first_fail == result.known_fail.rate_rps
    text = (f"{result.last_pass:.1f} req/s (fails at {result.first_fail:.1f}{' in the check step' if known else ''}, "
            f"limited by {limited}")
    text += ", confirmed by a second pass at or above it)" if result.confirmed else ")"
    if require_rps is not None:
        text += f"; required {require_rps:g}"
    return text


def _undecided_fail(result: SearchResult, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The search's lowest failure when its last step there ended open (neither shown met nor
    missed, its retries too where they ran): the capacity may then lie above that rate as well, and
    the sentence says whether a longer window would have decided it. None otherwise."""
    if result.first_fail is None or result.last_pass is None or result.generator_bound:
        return None
    there = [s for s in result.steps if s.rate_rps == result.first_fail]
    if not there or not there[-1].open:
        return None
    evidence = there[-1].evidence_s
    entries = [e for e in steps if e["offered_rps"] == round(result.first_fail, 3)]
    measured = max(entries, key=lambda e: e["index"])["measured_s"] if entries else None
    head = f"{result.first_fail:.1f} req/s was not shown missed, only not shown met"
    if evidence is None or measured is None:
        sentence = f"{head}, so the capacity may lie above it too"
    elif RETRY_MARGIN * evidence > measured:
        sentence = (f"{head}; at the clustering measured there, about {_minutes(RETRY_MARGIN * evidence)} of window "
                    "would decide it (--retry-max), so the capacity may lie above it too")
    else:
        sentence = (f"{head} with the independent requests a pass needs: its share of bad requests sits near the "
                    "allowance, so the capacity lies close to it")
    return {"rate_rps": _round(result.first_fail), "evidence_s": _round(evidence, 1), "sentence": sentence}


def _minutes(seconds: float) -> str:
    return f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.0f} min"


def condition_entry(name: str, result: SearchResult, steps: list[dict[str, Any]], *,
                    require_rps: float | None, wall_s: float, machine_drift: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """One condition's answer: capacity, bracket, what limited it, every step, and the capacity point.
    A `machine_drift` (`rushhour.scenarios.capacity.anchor`) that saw the machine change marks the
    figure unconfirmed and says so in its summary."""
    changed = bool(machine_drift and machine_drift.get("changed"))
    undecided = _undecided_fail(result, steps)
    summary = _text(result, require_rps) + (f"; not confirmed: {machine_drift['sentence']}" if changed and machine_drift
                                            else "")
    if undecided is not None:
        summary += f"; {undecided['sentence']}"
    at = next((s for s in steps if s["passed"] and s["offered_rps"] == round(result.last_pass or -1, 3)), None)
    return {
        "condition": name, "capacity_rps": result.capacity_rps,
        "bracket": [result.last_pass, result.first_fail],
        "limiting_slo": None if result.limiting == GENERATOR else result.limiting,
        "generator_bound": result.generator_bound, "generator_limit": result.generator_limit,
        "ceiling": result.ceiling, "below_min": result.below_min,
        "confirmed": False if changed else result.confirmed, "machine_drift": machine_drift,
        "undecided_fail": undecided,
        "known_fail": None if result.known_fail is None else {
            "rate_rps": _round(result.known_fail.rate_rps), "limiting": result.known_fail.limiting,
            "reason": result.known_fail.reason},
        "meets_requirement": None if require_rps is None else bool(
            result.capacity_rps is not None and result.capacity_rps >= require_rps),
        "summary": summary, "wall_s": round(wall_s, 1),
        "at_capacity": {"pools": at["pools"], "cost": at["cost"], "step": at["index"]} if at else None,
        "steps": sorted(steps, key=lambda s: s["offered_rps"]),
    }
