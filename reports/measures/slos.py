"""SLO verdicts: measured value, met or not, error budget spent, burn rates, per phase.

Budget consumed is bad share / allowed bad share, so 1.0 means the whole budget is gone. A
latency SLO is a good-events ratio over every attempted request: "P99 <= 2000 ms" is met when at
least 99% of the attempts succeeded within 2000 ms. Beside the verdict the report shows the
percentile over all attempts (failures at the moment they ended) and, labelled apart, over
successful requests only; when every failure is slower than the threshold, the first of them
agrees exactly with the verdict (nearest rank), while the second shows what an ok-only figure
would hide.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.estimate.intervals import nearest_rank, percentile_of
from rushhour.reports.estimate.series import SeriesInterval, quantile_interval, share_interval
from rushhour.reports.estimate.strata import stretch_labels
from rushhour.reports.measures.burn import burn_rates
from rushhour.reports.measures.drift import drift_slo, soak_section
from rushhour.reports.measures.goodput import goodput_slo
from rushhour.reports.rundata.selection import phase_segments, slo_scope, valid_and_bad
from rushhour.reports.schema import LATENCY_KINDS, SloSpec

Segment = tuple[str, float | None, float | None, np.ndarray]


def evaluate_slos(requests: pd.DataFrame, phases: pd.Series, phase_events: list[dict[str, Any]],
                  specs: list[SloSpec], duration_s: float, time_scale: float,
                  window: tuple[float, float] | None = None,
                  soak: dict[str, Any] | None = None,
                  faults: list[tuple[float, float]] | None = None) -> list[dict[str, Any]]:
    """One result dict per SLO: whole-run verdict, burn rates and per-phase breakdown; a goodput
    SLO is measured over `window` (default the whole run), see rushhour.reports.measures.goodput.
    Intervals measure dependence within each stretch of steady load where the run's phases or
    its `faults` (start, end in run seconds) changed it (`rushhour.reports.estimate.strata`)."""
    segments = phase_segments(phases, phase_events, requests["intended_s"].to_numpy(dtype=float))
    strata = load_stretches(requests, segments, faults or [])
    span = window if window is not None else (0.0, duration_s)
    if soak is None and any(spec.kind == "drift" for spec in specs):
        soak = soak_section(requests, None, duration_s)
    return [goodput_slo(requests, phases, phase_events, spec, specs, span) if spec.kind == "goodput"
            else drift_slo(spec, soak or {}) if spec.kind == "drift"
            else _evaluate_one(requests, phases, segments, spec, duration_s, time_scale, strata) for spec in specs]


def load_stretches(requests: pd.DataFrame, segments: list[Segment],
                   faults: list[tuple[float, float]]) -> np.ndarray | None:
    """Each request's stretch of steady load, cut at every phase's and fault's start and end;
    None when the run has one stretch only."""
    edges = [edge for _, start, end, _ in segments for edge in (start, end) if edge is not None]
    edges += [edge for window in faults for edge in window]
    if not edges:
        return None
    labels = stretch_labels(requests["intended_s"].to_numpy(dtype=float), edges)
    return labels if np.unique(labels).size > 1 else None


def _evaluate_one(requests: pd.DataFrame, phases: pd.Series, segments: list[Segment], spec: SloSpec,
                  duration_s: float, time_scale: float, strata: np.ndarray | None = None) -> dict[str, Any]:
    scope = slo_scope(requests, phases, spec)
    valid, bad = valid_and_bad(requests, spec)
    result = measure(requests, scope & valid, scope & bad, spec, strata)
    times = requests["intended_s"].to_numpy()
    rules = burn_rates(times, scope & valid, scope & bad, spec.allowed_bad_share, duration_s,
                       time_scale)
    result["burn_rates"] = [rule.as_dict() for rule in rules]
    result["phases"] = [
        {"phase": name, "start_s": start, "end_s": end,
         **measure(requests, scope & valid & mask, scope & bad & mask, spec, strata)}
        for name, start, end, mask in segments if spec.phase is None
    ]
    return result


def measure(requests: pd.DataFrame, valid: np.ndarray, bad: np.ndarray,
            spec: SloSpec, strata: np.ndarray | None = None) -> dict[str, Any]:
    """The verdict of `spec` over the requests marked valid; `bad` spends its budget. Intervals
    take the requests in time order (`rushhour.reports.estimate.series`): near a queue's knee
    neighbours are not independent, and each interval names the method and effective sample
    size behind it (`ci_basis`). `strata`, each request's stretch of steady load
    (`load_stretches`), has the dependence measured within each stretch."""
    n_valid, n_bad = int(valid.sum()), int(bad.sum())
    share_bad = n_bad / n_valid if n_valid else None
    budget = share_bad / spec.allowed_bad_share if share_bad is not None else None
    base = {
        "name": spec.name, "kind": spec.kind, "objective": _objective_value(spec),
        "objective_text": spec.objective_text, "samples": n_valid, "bad": n_bad,
        "budget_consumed": budget,
    }
    order = _time_order(requests)
    stretches = None if strata is None else _in_time(strata, order, valid)
    if spec.kind in LATENCY_KINDS:
        return base | _latency_measure(requests, order, valid, bad, spec, stretches)
    good_is_measured = spec.kind == "availability"
    share = share_interval(_in_time(bad, order, valid) != good_is_measured, strata=stretches)
    met = None if share.value is None else (
        share.value >= float(spec.objective or 0) if good_is_measured
        else share.value <= float(spec.max_share or 0))
    effective = min(share.dependence.effective, n_valid)
    return base | {"measured": share.value, "met": bool(met) if met is not None else False,
                   "ci": [share.low, share.high],
                   "trusted": n_valid > 0 and spec.allowed_bad_share * effective >= 1,
                   "ci_basis": interval_basis(share)}


def _latency_measure(requests: pd.DataFrame, order: np.ndarray | None, valid: np.ndarray,
                     bad: np.ndarray, spec: SloSpec, strata: np.ndarray | None) -> dict[str, Any]:
    """Good-events verdict, and the percentile over all attempts and over ok requests only."""
    percentile = float(spec.percentile or 0)
    latency = requests[spec.column].to_numpy(dtype=float)
    timed = _in_time(latency, order, valid)
    point = quantile_interval(timed, percentile, strata=strata)
    ok_only = percentile_of(latency[valid & requests["ok"].to_numpy()], percentile)
    good = share_interval(~_in_time(bad, order, valid), levels=np.where(np.isnan(timed), np.inf, timed),
                          strata=strata)
    n_valid, n_bad = int(valid.sum()), int(bad.sum())
    met = n_valid > 0 and n_valid - n_bad >= nearest_rank(percentile, n_valid)
    return {"measured": point.value, "measured_ms": point.value, "ci": [point.low, point.high],
            "trusted": point.enough, "met": met,
            "good_share": good.value, "good_share_ci": [good.low, good.high], "good_objective": percentile / 100.0,
            "measured_ok_only_ms": ok_only.value, "samples_ok": ok_only.samples,
            "ci_basis": interval_basis(point), "good_share_basis": interval_basis(good)}


def interval_basis(interval: SeriesInterval) -> dict[str, Any]:
    """What an interval rests on, for summary.json and the report: method, effective requests,
    block length and the lag-1 correlation of block statistics, and the sentence of a statement
    the data could not carry."""
    seen = interval.dependence
    return {"method": seen.method, "effective_samples": round(min(seen.effective, seen.samples), 1),
            "block_requests": seen.block_len,
            "lag1": None if seen.lag1 is None else round(seen.lag1, 3), "note": interval.note}


def _time_order(requests: pd.DataFrame) -> np.ndarray | None:
    """The permutation that puts requests in intended-send order; None when they already are."""
    times = requests["intended_s"].to_numpy(dtype=float)
    if times.size < 2 or bool(np.all(times[1:] >= times[:-1])):
        return None
    return np.argsort(times, kind="stable")


def _in_time(values: np.ndarray, order: np.ndarray | None, keep: np.ndarray) -> np.ndarray:
    """values[keep], in time order."""
    return values[keep] if order is None else values[order][keep[order]]


def _objective_value(spec: SloSpec) -> float:
    if spec.kind in LATENCY_KINDS:
        return float(spec.threshold_ms or 0)
    if spec.kind == "availability":
        return float(spec.objective or 0)
    return float(spec.max_share or 0)
