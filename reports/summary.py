"""The aggregation step: one RunData in, the summary.json dict out (no rendering here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from reports.costing import compute_cost
from reports.documents import documents_section
from reports.environment import environment
from reports.faults import SHED_STATUSES, RecoveryLimits, fault_impact, fault_windows, journal_for
from reports.results import RunData
from reports.selection import phase_labels
from reports.slo_eval import evaluate_slos
from reports.stats import summary_percentiles

CPU_SATURATED = 0.95
SCHEMA_VERSION = 1


def summarise(run: RunData) -> dict[str, Any]:
    """Every number the renderers show, as plain JSON-ready values."""
    requests, duration = run.requests, run.duration_s
    phase_events = run.events_of("phase")
    phases = phase_labels(requests, phase_events)
    windows = fault_windows(run.events, duration)
    limits = RecoveryLimits.from_slos(run.scenario.slos)
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "scenario": _scenario(run, duration),
        "requests": request_counts(requests),
        "throughput_rps": float(requests["ok"].sum() / duration) if duration > 0 else None,
        **latency_sections(requests),
        "slos": evaluate_slos(requests, phases, phase_events, run.scenario.slos, duration,
                              run.scenario.traffic.time_scale),
        "cost": compute_cost(requests, run.metrics, run.scenario.cost,
                             [(w.start_s, w.end_s) for w in windows]),
        "faults": [fault_impact(requests, w, limits, duration, journal_for(w, run.journals))
                   for w in windows],
        "generator": generator_health(run),
        "phases": [{"name": e.get("name"), "start_s": e.get("start_s"), "end_s": e.get("end_s")}
                   for e in phase_events],
        "environment": environment(next(iter(run.events_of("run_start")), None), run.metrics,
                                   run.scenario.seed),
        "missing": list(run.missing),
        "aborted": [e.get("reason", "") for e in run.events_of("abort")],
    }
    documents = documents_section(requests)
    if documents is not None:
        summary["documents"] = documents
    summary["verdict"], summary["verdict_reason"] = verdict(summary)
    return summary


def _scenario(run: RunData, duration: float) -> dict[str, Any]:
    traffic = run.scenario.traffic
    return {"name": run.scenario.name, "seed": run.scenario.seed, "duration_s": duration,
            "time_scale": traffic.time_scale, "rate_scale": traffic.rate_scale,
            "traffic_model": traffic.model, "results_dir": str(run.root)}


def request_counts(requests: pd.DataFrame) -> dict[str, int]:
    """scheduled / completed (got any HTTP answer) / ok / failed / shed (429 or 503)."""
    status = requests["status"].to_numpy()
    ok = requests["ok"].to_numpy()
    return {
        "scheduled": int(len(requests)),
        "sent": int(requests["sent_s"].notna().sum()),
        "completed": int(((status != 0) & requests["done_s"].notna().to_numpy()).sum()),
        "ok": int(ok.sum()),
        "failed": int((~ok).sum()),
        "shed": int(np.isin(status, SHED_STATUSES).sum()),
        "degraded": int((ok & requests["degraded"].to_numpy()).sum()),
        "cached": int((ok & requests["cached"].to_numpy()).sum()),
    }


def latency_sections(requests: pd.DataFrame) -> dict[str, Any]:
    """Corrected (from intended send) and uncorrected (from actual send) percentiles of ok requests."""
    ok = requests["ok"].to_numpy()
    corrected = summary_percentiles(requests["latency_ms"].to_numpy()[ok])
    uncorrected = summary_percentiles(requests["service_ms"].to_numpy()[ok])
    return {
        "latency_ms": {key: p.value for key, p in corrected.items()},
        "latency_uncorrected_ms": {key: p.value for key, p in uncorrected.items()},
        "latency_detail": {
            "corrected": {key: p.as_dict() for key, p in corrected.items()},
            "uncorrected": {key: p.as_dict() for key, p in uncorrected.items()},
        },
    }


def generator_health(run: RunData) -> dict[str, Any]:
    """Was the load generator keeping up? Schedule lag from the requests, CPU from its event."""
    sent = run.requests["sent_s"].to_numpy()
    lag_ms = (sent - run.requests["intended_s"].to_numpy()) * 1000.0
    lag = summary_percentiles(lag_ms)["p99"]
    cpu_values = [float(e["cpu_max"]) for e in run.events_of("generator") if e.get("cpu_max") is not None]
    cpu_max = max(cpu_values) if cpu_values else None
    limit = run.scenario.load.max_lag_p99_ms
    reasons = []
    if lag.value is not None and lag.value > limit:
        reasons.append(f"schedule lag P99 {lag.value:.1f} ms is above the {limit:g} ms limit")
    if cpu_max is not None and cpu_max >= CPU_SATURATED:
        reasons.append(f"generator CPU peaked at {100 * cpu_max:.0f}% (limit {100 * CPU_SATURATED:.0f}%)")
    return {"schedule_lag_p99_ms": lag.value, "lag_samples": lag.samples, "cpu_max": cpu_max,
            "max_lag_p99_ms": limit, "valid": not reasons, "reasons": reasons}


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
    if missed:
        return "fail", "SLO(s) missed: " + ", ".join(missed) + "."
    return "pass", f"All {len(summary['slos'])} SLO(s) met."
