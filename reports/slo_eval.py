"""SLO verdicts: measured value, met or not, error budget spent, burn rates, per phase.

Budget consumed is bad share / allowed bad share, so 1.0 means the whole budget is gone. For a
latency SLO this agrees exactly with the nearest-rank percentile: P99 <= threshold holds iff at
most 1% of the valid requests are slower than the threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import beta

from reports.burn import burn_rates
from reports.selection import phase_order, slo_scope, valid_and_bad
from reports.slo import SloSpec
from reports.stats import CONFIDENCE, percentile_of


def evaluate_slos(requests: pd.DataFrame, phases: pd.Series, phase_events: list[dict[str, Any]],
                  specs: list[SloSpec], duration_s: float, time_scale: float) -> list[dict[str, Any]]:
    """One result dict per SLO: whole-run verdict, burn rates and per-phase breakdown."""
    names = phase_order(phases, phase_events)
    return [_evaluate_one(requests, phases, names, spec, duration_s, time_scale) for spec in specs]


def _evaluate_one(requests: pd.DataFrame, phases: pd.Series, names: list[str], spec: SloSpec,
                  duration_s: float, time_scale: float) -> dict[str, Any]:
    scope = slo_scope(requests, phases, spec)
    valid, bad = valid_and_bad(requests, spec)
    result = measure(requests, scope & valid, scope & bad, spec)
    times = requests["intended_s"].to_numpy()
    rules = burn_rates(times, scope & valid, scope & bad, spec.allowed_bad_share, duration_s,
                       time_scale)
    result["burn_rates"] = [rule.as_dict() for rule in rules]
    phase_labels = phases.to_numpy()
    result["phases"] = [
        {"phase": name, **measure(requests, scope & valid & (phase_labels == name),
                                  scope & bad & (phase_labels == name), spec)}
        for name in names if spec.phase is None
    ]
    return result


def measure(requests: pd.DataFrame, valid: np.ndarray, bad: np.ndarray,
            spec: SloSpec) -> dict[str, Any]:
    """The verdict of `spec` over the requests marked valid; `bad` spends its budget."""
    n_valid, n_bad = int(valid.sum()), int(bad.sum())
    share_bad = n_bad / n_valid if n_valid else None
    budget = share_bad / spec.allowed_bad_share if share_bad is not None else None
    base = {
        "name": spec.name, "kind": spec.kind, "objective": _objective_value(spec),
        "objective_text": spec.objective_text, "samples": n_valid, "bad": n_bad,
        "budget_consumed": budget,
    }
    if spec.kind == "latency":
        return base | _latency_measure(requests["latency_ms"].to_numpy()[valid], spec)
    measured, low, high = _share_measure(n_valid, n_bad, good_is_measured=spec.kind == "availability")
    met = None if measured is None else (
        measured >= float(spec.objective or 0) if spec.kind == "availability"
        else measured <= float(spec.max_share or 0))
    return base | {"measured": measured, "met": bool(met) if met is not None else False,
                   "ci": [low, high], "trusted": n_valid > 0 and spec.allowed_bad_share * n_valid >= 1}


def _latency_measure(latencies: np.ndarray, spec: SloSpec) -> dict[str, Any]:
    point = percentile_of(latencies, float(spec.percentile or 0))
    met = point.value is not None and point.value <= float(spec.threshold_ms or 0)
    return {"measured": point.value, "met": met, "ci": [point.ci_low, point.ci_high],
            "trusted": point.trusted}


def _share_measure(n_valid: int, n_bad: int,
                   good_is_measured: bool) -> tuple[float | None, float | None, float | None]:
    """The share (good or bad) with its Clopper-Pearson interval."""
    if n_valid == 0:
        return None, None, None
    hits = n_valid - n_bad if good_is_measured else n_bad
    tail = (1.0 - CONFIDENCE) / 2.0
    low = float(beta.ppf(tail, hits, n_valid - hits + 1)) if hits > 0 else 0.0
    high = float(beta.ppf(1 - tail, hits + 1, n_valid - hits)) if hits < n_valid else 1.0
    return hits / n_valid, low, high


def _objective_value(spec: SloSpec) -> float:
    if spec.kind == "latency":
        return float(spec.threshold_ms or 0)
    if spec.kind == "availability":
        return float(spec.objective or 0)
    return float(spec.max_share or 0)
