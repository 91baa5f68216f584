"""Soak runs: latency, error rate and the server's memory per window, a trend line through each, and
the `drift` SLO that fails when a trend climbs significantly faster than it allows.

A soak drill holds a steady rate for hours to find leaks and slow drifts, which a whole-run
percentile hides: a P99 that doubles over six hours can still meet its objective on average. So
the run is cut into windows (an hour each on a long run; a twelfth of the run on a short one, so
a ten-minute rehearsal still gets a line), each window gives one point per metric, and an
ordinary least-squares line through the points gives the slope per hour with its 95% interval.
Neighbouring windows are correlated (a slow hour is followed by a slow hour), so the slope's
standard error is widened for the lag-1 correlation of the residuals and the t quantile takes
the effective number of windows (rushhour.reports.estimate.trend). A drift SLO fails only when
the whole interval lies above `max_slope`: noise that merely might be a drift does not fail it,
and a run too short for a line (fewer than `MIN_POINTS` windows with data) is not trusted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.estimate.trend import MIN_POINTS, trend_interval
from rushhour.reports.schema import SloSpec

__all__ = ["MIN_POINTS", "DRIFT_UNITS", "drift_slo", "metric_series", "soak_section", "trend", "window_width"]

HOUR_S = 3600.0
SHORT_RUN_WINDOWS = 12
CONFIDENCE = 0.95
MEMORY_METRIC = "process_resident_memory_bytes"
DRIFT_UNITS = {"latency_p99": "ms/h", "error_rate": "share/h", "server_memory": "MB/h"}
MIN_WINDOW_REQUESTS = 1
SHOW_FROM_S = 600.0
"""Shorter runs keep the section in summary.json but the report shows it only with a drift SLO."""


def window_width(duration_s: float) -> float:
    """An hour on a run of twelve hours or more; a twelfth of the run on a shorter one."""
    return HOUR_S if duration_s >= SHORT_RUN_WINDOWS * HOUR_S else max(duration_s / SHORT_RUN_WINDOWS, 1e-3)


def trend(t_s: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    """The least-squares line through (time, value), its slope per hour and the slope's 95%
    interval, widened for correlated windows (rushhour.reports.estimate.trend); `trusted` False
    (and no interval) with fewer than MIN_POINTS finite points."""
    line = trend_interval(t_s / HOUR_S, values, CONFIDENCE)
    return {"slope_per_h": line.slope, "ci": [line.low, line.high], "intercept": line.intercept,
            "points": line.points, "trusted": line.trusted, "lag1": line.lag1,
            "effective_points": line.effective_points, "method": line.method}


def _request_windows(requests: pd.DataFrame, width: float) -> pd.DataFrame:
    """Per window of intended send time: its middle, P99 latency of the attempts, error rate."""
    sent = np.isfinite(requests["sent_s"].to_numpy(dtype=float))
    frame = pd.DataFrame({"w": np.floor(requests["intended_s"].to_numpy(dtype=float)[sent] / width),
                          "latency": requests["latency_ms"].to_numpy(dtype=float)[sent],
                          "bad": ~requests["ok"].to_numpy(dtype=bool)[sent]})
    groups = frame.groupby("w")
    out = pd.DataFrame({"latency_p99": groups["latency"].quantile(0.99), "error_rate": groups["bad"].mean(),
                        "requests": groups.size()})
    out = out[out["requests"] >= MIN_WINDOW_REQUESTS]
    out.index = (out.index.to_numpy(dtype=float) + 0.5) * width
    return out


def memory_series(target_metrics: pd.DataFrame | None, width: float) -> pd.Series:
    """The target's resident memory (MB, summed over its processes at each scrape), mean per
    window; empty when the target exports no `process_resident_memory_bytes`."""
    if target_metrics is None or not len(target_metrics) or "metric" not in target_metrics:
        return pd.Series(dtype=float)
    rows = target_metrics[target_metrics["metric"] == MEMORY_METRIC]
    if not len(rows):
        return pd.Series(dtype=float)
    per_scrape = rows.groupby("t_s")["value"].sum() / 1e6
    windows = per_scrape.groupby(np.floor(per_scrape.index.to_numpy(dtype=float) / width)).mean()
    windows.index = (windows.index.to_numpy(dtype=float) + 0.5) * width
    return windows


def metric_series(requests: pd.DataFrame, target_metrics: pd.DataFrame | None,
                  duration_s: float) -> dict[str, pd.Series]:
    """Each drift metric as a series indexed by window middle (seconds on the run's clock)."""
    width = window_width(duration_s)
    windows = _request_windows(requests, width)
    return {"latency_p99": windows["latency_p99"], "error_rate": windows["error_rate"],
            "server_memory": memory_series(target_metrics, width)}


def soak_section(requests: pd.DataFrame, target_metrics: pd.DataFrame | None,
                 duration_s: float) -> dict[str, Any]:
    """The report's soak section: the window width, each window's figures, each metric's trend."""
    series = metric_series(requests, target_metrics, duration_s)
    return {
        "shown": duration_s >= SHOW_FROM_S,
        "window_s": window_width(duration_s),
        "windows": [{"t_s": float(t), **{name: _finite(s.get(t)) for name, s in series.items()}}
                    for t in sorted(set().union(*(s.index for s in series.values())))],
        "trends": {name: trend(s.index.to_numpy(dtype=float), s.to_numpy(dtype=float)) | {"unit": DRIFT_UNITS[name]}
                   for name, s in series.items()},
    }


def drift_slo(spec: SloSpec, soak: dict[str, Any]) -> dict[str, Any]:
    """A drift SLO's result in the shape of the others: met unless the slope's whole 95% interval
    is above `max_slope`; an untrusted line (too few windows, no memory series) is met=False."""
    metric = str(spec.metric)
    line = soak["trends"][metric]
    allowed = float(spec.max_slope if spec.max_slope is not None else 0.0)
    low = line["ci"][0]
    met = bool(line["trusted"] and low is not None and low <= allowed)
    unit = DRIFT_UNITS[metric]
    slope = line["slope_per_h"]
    text = "not measured" if slope is None else (
        f"{slope:+.4g} {unit} [{line['ci'][0]:+.3g}, {line['ci'][1]:+.3g}] "
        f"({line['points']} windows, worth {line['effective_points']:.1f} independent ones)")
    return {"name": spec.name, "kind": "drift", "objective": allowed, "objective_text": spec.objective_text,
            "metric": metric, "unit": unit, "measured": slope, "measured_text": text, "ci": line["ci"],
            "met": met, "trusted": bool(line["trusted"]), "samples": line["points"], "bad": 0,
            "budget_consumed": None, "burn_rates": [], "phases": [],
            "method": line.get("method"), "effective_points": line.get("effective_points"),
            "drift_note": None if line["trusted"] else (
                f"only {line['points']} window(s) with data; a trend needs {MIN_POINTS}, so drift is not judged")}


def _finite(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None



def soak_and_drift(requests: pd.DataFrame, target_metrics: pd.DataFrame | None, duration_s: float,
                   specs: list[SloSpec], slos: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary's `soak` section, and its SLO rows with each drift SLO judged on the target's
    memory too (evaluate_slos sees the requests only); rows and specs are in the same order."""
    soak = soak_section(requests, target_metrics, duration_s)
    rows = [slo | drift_slo(spec, soak) if spec.kind == "drift" else slo for spec, slo in zip(specs, slos)]
    soak["shown"] = soak["shown"] or any(spec.kind == "drift" for spec in specs)
    return {"soak": soak, "slos": rows + slos[len(specs):]}
