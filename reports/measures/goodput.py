"""Goodput: requests per second that met every per-request objective, over the run and per phase.

A request counts when it succeeded and, for every latency, TTFT, TPOT and ITL objective whose
scope covers it, was good (DistServe's and GenAI-Perf's goodput). Requests are placed by their
intended send time, like throughput, and the rate is taken over the schedule's window, or over
each phase stretch as it happened. A `goodput` SLO is met when the rate reaches its `min_rps`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.rundata.attempts import attempted
from rushhour.reports.rundata.selection import phase_segments, slo_scope, valid_and_bad
from rushhour.reports.schema import LATENCY_KINDS, SloSpec

__all__ = ["goodput_section", "goodput_slo", "per_request_good"]


def per_request_specs(specs: list[SloSpec]) -> list[SloSpec]:
    """The objectives a single request can meet or miss (latency, ttft, tpot, itl)."""
    return [spec for spec in specs if spec.kind in LATENCY_KINDS]


def per_request_good(requests: pd.DataFrame, phases: pd.Series, specs: list[SloSpec]) -> np.ndarray:
    """Per row: attempted, succeeded, and good for every per-request objective in its scope."""
    good = attempted(requests) & requests["ok"].to_numpy()
    for spec in per_request_specs(specs):
        _, bad = valid_and_bad(requests, spec)
        good &= ~(slo_scope(requests, phases, spec) & bad)
    return good


def _rate(requests: pd.DataFrame, good: np.ndarray, mask: np.ndarray, span_s: float) -> dict[str, Any]:
    tried = attempted(requests) & mask
    n_good = int((good & mask).sum())
    return {"good": n_good, "attempted": int(tried.sum()),
            "rps": n_good / span_s if span_s > 0 else None,
            "share": n_good / int(tried.sum()) if tried.any() else None}


def goodput_section(requests: pd.DataFrame, phases: pd.Series, phase_events: list[dict[str, Any]],
                    specs: list[SloSpec], window: tuple[float, float]) -> dict[str, Any] | None:
    """summary["goodput"]: the objectives used, the whole window, and each phase stretch (None
    when the scenario has no per-request objective)."""
    used = per_request_specs(specs)
    if not used:
        return None
    good = per_request_good(requests, phases, specs)
    intended = requests["intended_s"].to_numpy(dtype=float)
    start, end = window
    section = {"objectives": [spec.name for spec in used],
               **_rate(requests, good, (intended >= start) & (intended < end), end - start)}
    section["phases"] = [
        {"phase": name, "start_s": lo, "end_s": hi, **_rate(requests, good, mask, (hi - lo) if lo is not None and hi is not None else 0.0)}
        for name, lo, hi, mask in phase_segments(phases, phase_events, intended)
    ]
    return section


def goodput_slo(requests: pd.DataFrame, phases: pd.Series, phase_events: list[dict[str, Any]],
                spec: SloSpec, specs: list[SloSpec], window: tuple[float, float]) -> dict[str, Any]:
    """A goodput SLO's result in the shape of the others (measured in req/s)."""
    section = goodput_section(requests, phases, phase_events, specs, window) or {"rps": None, "attempted": 0,
                                                                                 "good": 0, "phases": []}
    target = float(spec.min_rps or 0)

    def verdict(part: dict[str, Any]) -> dict[str, Any]:
        rps = part.get("rps")
        return {"kind": "goodput", "budget_consumed": None, "measured": rps, "met": rps is not None and rps >= target, "ci": [None, None],
                "trusted": part.get("attempted", 0) > 0, "samples": part.get("attempted", 0),
                "bad": part.get("attempted", 0) - part.get("good", 0), "good_share": part.get("share")}

    return {"name": spec.name, "objective": target, "objective_text": spec.objective_text,
            "burn_rates": [], **verdict(section),
            "phases": [{"phase": p["phase"], "start_s": p["start_s"], "end_s": p["end_s"], **verdict(p)}
                       for p in section["phases"]] if spec.phase is None else []}
