"""The aggregation step: one RunData in, the summary.json dict out (no rendering here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.kernel.generator import GeneratorProblem, generator_problems, schedule_lag_ms
from rushhour.reports.estimate.intervals import summary_percentiles
from rushhour.reports.measures.cost import compute_cost
from rushhour.reports.measures.documents import documents_section
from rushhour.reports.measures.drift import soak_and_drift
from rushhour.reports.measures.environment import describe_environment
from rushhour.reports.measures.facts import RunFacts
from rushhour.reports.measures.faults import SHED_STATUSES, fault_impact, journal_for, limits_for
from rushhour.reports.measures.goodput import goodput_section
from rushhour.reports.measures.harness import harness_checks
from rushhour.reports.measures.slos import evaluate_slos
from rushhour.reports.measures.steady import steady_mask, steady_section
from rushhour.reports.measures.steady_slos import judge_steady
from rushhour.reports.measures.streaming import streaming_section
from rushhour.reports.measures.targetmetrics import target_metrics_section
from rushhour.reports.measures.tokencost import token_costs
from rushhour.reports.rundata.attempts import attempt_values, attempted
from rushhour.reports.rundata.results import RunData

SCHEMA_VERSION = 2


def summarise(run: RunData, facts: RunFacts | None = None) -> dict[str, Any]:
    """Every number the renderers show, as plain JSON-ready values; `facts` (derived from `run`
    when not given) are the figures several sections share, worked out once."""
    facts = facts or RunFacts.of(run)
    requests, duration = run.requests, run.duration_s
    phase_events, phases, windows = facts.phase_events, facts.phases, facts.windows
    specs, implicit, limits, window = facts.slos, facts.implicit_slo, facts.limits, facts.window
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "scenario": _scenario(run, duration),
        "requests": request_counts(requests),
        **throughput(requests, window),
        **latency_sections(requests),
        "slos": [slo | {"implicit": implicit is not None}
                 for slo in judge_steady(evaluate_slos(requests, phases, phase_events, specs, duration,
                                                       run.scenario.traffic.time_scale, window=window,
                                                       faults=[(w.start_s, w.end_s) for w in windows]),
                                         specs, requests, phases,
                                         steady_mask(requests["intended_s"].to_numpy(float), facts.steady))],
        "implicit_slo": implicit,
        "cost": compute_cost(requests, run.metrics, run.scenario.cost,
                             [(w.start_s, w.end_s) for w in windows], window=window),
        "faults": [fault_impact(requests, w, limits_for(limits, w, run.scenario.chaos, run.scenario.traffic.time_scale),
                                duration, journal_for(w, run.journals)) for w in windows],
        "generator": generator_health(run),
        "phases": [{"name": e.get("name"), "start_s": e.get("start_s"), "end_s": e.get("end_s")}
                   for e in phase_events],
        "environment": describe_environment(next(iter(run.events_of("run_start")), None), run.metrics,
                                   run.scenario.seed),
        "missing": list(run.missing),
        "aborted": [e.get("reason", "") for e in run.events_of("abort")],
        **harness_checks(run),
    }
    documents = documents_section(requests)
    if documents is not None:
        summary["documents"] = documents
    summary["streaming"] = streaming_section(requests)
    summary["goodput"] = goodput_section(requests, phases, phase_events, run.scenario.slos, window)
    summary["steady"] = steady_section(facts.steady)
    if summary["cost"]["known"]:
        summary["cost"]["tokens"] = token_costs(requests, phases, summary["cost"]["by_pool"], window)
    summary["target_metrics"] = target_metrics_section(run)
    summary["deviations"] = deviations(summary["faults"])
    summary["fail_on_deviation"] = run.scenario.fail_on_deviation
    summary |= soak_and_drift(requests, run.target_metrics, duration, specs, summary["slos"])
    summary["verdict"], summary["verdict_reason"] = verdict(summary)
    return summary


def deviations(faults: list[dict[str, Any]]) -> list[str]:
    """The faults whose experiment's steady-state hypothesis deviated (or was not met after)."""
    return [f["name"] for f in faults
            if (state := f.get("steady_state")) and (state["deviated"] or state["after_met"] is False)]


def _scenario(run: RunData, duration: float) -> dict[str, Any]:
    traffic = run.scenario.traffic
    return {"name": run.scenario.name, "seed": run.scenario.seed, "duration_s": duration,
            "time_scale": traffic.time_scale, "rate_scale": traffic.rate_scale,
            "traffic_model": traffic.model, "results_dir": str(run.root),
            "peak_rps": traffic.peak_rps, "calibration": calibration_section(traffic.calibration)}


def calibration_section(calibration: dict[str, Any] | None) -> dict[str, Any] | None:
    """The peak a relative `peak_rps` resolved to, and one line saying so for the report header."""
    if not calibration:
        return None
    label = "N-1 capacity" if calibration.get("condition") == "n-1" else "capacity"
    note = calibration.get("note")
    where = "" if str(note or "").startswith("of ") else " measured on this machine"  # a URL target's note names it
    text = (f"peak {calibration.get('peak_rps', 0):g} req/s = {calibration.get('factor', 0):g}x the {label} of "
            f"{calibration.get('capacity_rps', 0):g} req/s{where}")
    return {**calibration, "text": f"{text} ({note})" if note else text}


def request_counts(requests: pd.DataFrame) -> dict[str, int]:
    """How the scheduled requests split: not sent, or attempted and then ok or failed.

    scheduled = not_sent + ok + failed; `completed` got any HTTP answer; `end_imputed` failed
    without a recorded end and were counted as ending at the run's end (rushhour.reports.rundata.attempts).
    """
    status = requests["status"].to_numpy()
    ok = requests["ok"].to_numpy()
    tried = attempted(requests)
    imputed = requests["end_imputed"].to_numpy() if "end_imputed" in requests else np.zeros(len(requests), bool)
    return {
        "scheduled": len(requests),
        "sent": int(requests["sent_s"].notna().sum()),
        "attempted": int(tried.sum()),
        "not_sent": int((~tried).sum()),
        "completed": int(((status != 0) & requests["done_s"].notna().to_numpy()).sum()),
        "ok": int(ok.sum()),
        "failed": int((tried & ~ok).sum()),
        "end_imputed": int(imputed.sum()),
        "shed": int(np.isin(status, SHED_STATUSES).sum()),
        "degraded": int((ok & requests["degraded"].to_numpy()).sum()),
        "cached": int((ok & requests["cached"].to_numpy()).sum()),
    }


def throughput(requests: pd.DataFrame, window: tuple[float, float]) -> dict[str, Any]:
    """Ok answers to the requests scheduled inside the window, per second of that window.

    Teardown (waiting for the last replies, stopping the server) is not part of the denominator.
    """
    start, end = window
    intended = requests["intended_s"].to_numpy(dtype=float)
    inside = requests["ok"].to_numpy() & (intended >= start) & (intended < end)
    rate = float(inside.sum() / (end - start)) if end > start else None
    return {"throughput_rps": rate, "throughput_window_s": [start, end]}


def latency_sections(requests: pd.DataFrame) -> dict[str, Any]:
    """Percentiles over every attempted request (failures at the moment they ended), from the
    intended send (corrected) and from the actual send (uncorrected), and over ok requests only."""
    ok = requests["ok"].to_numpy()
    corrected = summary_percentiles(attempt_values(requests, "latency_ms"))
    uncorrected = summary_percentiles(attempt_values(requests, "service_ms"))
    ok_only = summary_percentiles(np.where(ok, requests["latency_ms"].to_numpy(dtype=float), np.nan))
    return {
        "latency_ms": {key: p.value for key, p in corrected.items()},
        "latency_uncorrected_ms": {key: p.value for key, p in uncorrected.items()},
        "latency_ok_only_ms": {key: p.value for key, p in ok_only.items()},
        "latency_detail": {
            "corrected": {key: p.as_dict() for key, p in corrected.items()},
            "uncorrected": {key: p.as_dict() for key, p in uncorrected.items()},
            "corrected_ok_only": {key: p.as_dict() for key, p in ok_only.items()},
        },
    }


def generator_health(run: RunData) -> dict[str, Any]:
    """Was the load generator keeping up? Schedule lag from the requests, CPU from its event."""
    lag = summary_percentiles(schedule_lag_ms(run.requests))["p99"]
    cpu_values = [float(e["cpu_max"]) for e in run.events_of("generator") if e.get("cpu_max") is not None]
    cpu_max = max(cpu_values) if cpu_values else None
    limit = run.scenario.load.max_lag_p99_ms
    waits = run.requests["pool_wait_ms"] if "pool_wait_ms" in run.requests else pd.Series(np.nan, run.requests.index)
    wait = summary_percentiles(waits.to_numpy(dtype=float))["p99"]
    duplicates = int((run.requests["fired"].to_numpy() > 1).sum()) if "fired" in run.requests else 0
    reasons = [_health_reason(problem) for problem in generator_problems(
        lag_p99_ms=lag.value, pool_wait_p99_ms=wait.value, duplicates=duplicates, cpu_max=cpu_max,
        max_lag_p99_ms=limit)]
    return {"schedule_lag_p99_ms": lag.value, "lag_samples": lag.samples, "cpu_max": cpu_max,
            "pool_wait_p99_ms": wait.value, "duplicates": duplicates,
            "max_lag_p99_ms": limit, "valid": not reasons, "reasons": reasons}


def _health_reason(problem: GeneratorProblem) -> str:
    value, limit = problem.value, problem.limit
    return {"lag": f"schedule lag P99 {value:.1f} ms is above the {limit:g} ms limit",
            "pool_wait": f"requests waited for a free connection (pool wait P99 {value:.1f} ms is above "
                         f"the {limit:g} ms lag limit), so the load turned closed-loop",
            "duplicates": f"{value:.0f} scheduled request(s) were fired more than once",
            "cpu": f"generator CPU peaked at {100 * value:.0f}% (limit {100 * limit:.0f}%)"}[problem.check]


def verdict(summary: dict[str, Any]) -> tuple[str, str]:
    """invalid (measurement untrustworthy) > fail (an SLO missed) > pass, with a plain reason."""
    if summary["aborted"]:
        return "invalid", "The run was aborted: " + "; ".join(summary["aborted"]) + "."
    if not summary["generator"]["valid"]:
        return "invalid", ("The load generator, not the server, was the bottleneck ("
                           + "; ".join(summary["generator"]["reasons"])
                           + "), so these latencies measure the generator and prove nothing.")
    if summary["requests"]["scheduled"] == 0:
        return "invalid", "No request was scheduled, so there is nothing to judge."
    missed = [slo["name"] for slo in summary["slos"] if not slo["met"]]
    requests = summary["requests"]
    deviated = summary.get("deviations") or []
    named = f"{len(deviated)} hypothesis deviated: " if len(deviated) == 1 else f"{len(deviated)} hypotheses deviated: "
    named += ", ".join(deviated)
    if requests.get("attempted") and not requests.get("ok"):
        return "fail", (f"Every one of the {requests['attempted']} attempted requests failed"
                        + (f"; SLO(s) missed: {', '.join(missed)}." if missed else "."))
    if missed:
        return "fail", "SLO(s) missed: " + ", ".join(missed) + (f"; {named}." if deviated else ".")
    if deviated and summary.get("fail_on_deviation"):
        return "fail", f"All {len(summary['slos'])} SLO(s) met, but {named} (fail_on_deviation is set)."
    met = f"All {len(summary['slos'])} SLO(s) met" + (" (implicit availability objective)" if summary.get("implicit_slo") else "")
    return "pass", met + (f"; {named}." if deviated else ".")
