"""Which charts the report shows, each fed from the aggregations in timeseries.py.

A chart whose data is missing still appears, as a note naming the missing file, so a reader
never wonders whether a chart was forgotten or its data was absent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rushhour.reports.charts.plotting import Chart, cdf_chart, length_chart, missing_chart, time_chart, twin_chart
from rushhour.reports.charts.stream_charts import stream_charts
from rushhour.reports.charts.target_charts import target_charts
from rushhour.reports.charts.timeseries import cache_hit_ratio, latency_by_length, pool_series, request_series
from rushhour.reports.measures.cost import cost_rate
from rushhour.reports.measures.faults import FaultWindow
from rushhour.reports.measures.pools import healthy_nodes
from rushhour.reports.rundata.attempts import attempt_values
from rushhour.reports.rundata.results import RunData
from rushhour.reports.schema import SloSpec

NO_METRICS = "server_metrics.parquet is missing or empty, so this chart cannot be drawn."


def all_charts(run: RunData, faults: Sequence[FaultWindow],
               steady: Sequence[tuple[float, float]] = ()) -> list[Chart]:
    """Every chart of the report, in reading order; `steady` windows are marked on latency over time."""
    series = request_series(run.requests, run.duration_s)
    return [
        *request_charts(series, faults, run.scenario.slos, steady),
        *latency_charts(run.requests),
        *stream_charts(run.requests, run.duration_s, faults, run.scenario.slos),
        *server_charts(run, faults),
        *target_charts(run, faults, steady),
    ]


def latency_charts(requests: pd.DataFrame) -> list[Chart]:
    """The latency distribution charts, or notes when no request was attempted."""
    corrected, uncorrected = attempt_values(requests, "latency_ms"), attempt_values(requests, "service_ms")
    if np.isnan(corrected).all():
        note = "No request was attempted, so there is no latency distribution to draw."
        return [missing_chart("latency_cdf", "Latency CDF: corrected vs uncorrected", note),
                missing_chart("latency_by_length", "Latency by text length", note)]
    return [cdf_chart(corrected, uncorrected), length_chart(latency_by_length(requests))]


def request_charts(series: pd.DataFrame, faults: Sequence[FaultWindow],
                   slos: list[SloSpec], steady: Sequence[tuple[float, float]] = ()) -> list[Chart]:
    """Charts built from requests.parquet alone: rates, latency over time, errors, degrades."""
    x = series["t_s"].to_numpy()
    threshold = next((s for s in slos if s.kind == "latency" and s.priority is None
                      and s.mode is None and s.phase is None), None)
    hline = (float(threshold.threshold_ms or 0), f"SLO {threshold.name}") if threshold else None
    return [
        time_chart("rates", "Offered vs achieved vs shed rate", "requests/s", x,
                   {key: series[f"{key}_rps"].to_numpy() for key in ("offered", "achieved", "shed")},
                   faults),
        time_chart("latency_over_time", "P50 / P95 / P99 latency over time", "latency (ms)", x,
                   {p.upper(): series[f"{p}_ms"].to_numpy() for p in ("p50", "p95", "p99")},
                   faults, hline=hline, steady=steady),
        time_chart("errors_sheds", "Errors and sheds over time", "requests/s", x,
                   {"errors (not shed)": series["error_rps"].to_numpy(),
                    "shed (429/503)": series["shed_rps"].to_numpy()}, faults),
        time_chart("error_degrade_rates", "Error and degrade rates", "share", x,
                   {"error rate (of offered)": series["error_rate"].to_numpy(),
                    "degrade rate (of ok)": series["degrade_rate"].to_numpy()}, faults),
    ]


def server_charts(run: RunData, faults: Sequence[FaultWindow]) -> list[Chart]:
    """Charts built from server_metrics.parquet; placeholders when it is absent."""
    titles = {"queue_batch": "Queue depth and batch size", "nodes_breakers": "Healthy nodes per pool and breakers open",
              "cache_hit_ratio": "Cache hit ratio", "cost_rate": "Cost rate"}
    metrics = run.metrics
    if metrics is None:
        return [missing_chart(key, title, NO_METRICS) for key, title in titles.items()]
    queue = pool_series(metrics, "queue_depth")
    charts = [
        _twin_or_note("queue_batch", titles["queue_batch"], queue, "queue depth",
                      pool_series(metrics, "batch_size_mean"), "batch size", faults),
        _twin_or_note("nodes_breakers", titles["nodes_breakers"], healthy_nodes(metrics),
                      "healthy nodes", pool_series(metrics, "breakers_open"), "breakers open", faults),
    ]
    ratio = cache_hit_ratio(metrics)
    charts.append(time_chart("cache_hit_ratio", titles["cache_hit_ratio"], "hits / lookups",
                             ratio.index.to_numpy(float), {"cache hit ratio": ratio.to_numpy(float)}, faults)
                  if ratio.notna().any() else
                  missing_chart("cache_hit_ratio", titles["cache_hit_ratio"], "No cache counters were scraped."))
    charts.append(_cost_chart(run, faults, titles["cost_rate"]))
    return charts


def _twin_or_note(key: str, title: str, left: pd.DataFrame, left_label: str, right: pd.DataFrame,
                  right_label: str, faults: Sequence[FaultWindow]) -> Chart:
    if left.empty:
        return missing_chart(key, title, f"server_metrics.parquet has no {left_label} column.")
    right = right.reindex(left.index) if not right.empty else right
    return twin_chart(key, title, left.index.to_numpy(float), left, left_label, right, right_label, faults)


def _cost_chart(run: RunData, faults: Sequence[FaultWindow], title: str) -> Chart:
    model, metrics = run.scenario.cost, run.metrics
    if model is None or metrics is None or "nodes_alive" not in metrics.columns:
        return missing_chart("cost_rate", title, "Cost unknown: no cost model or no nodes_alive metric.")
    rate = cost_rate(metrics, model)
    return time_chart("cost_rate", title, "USD per hour", rate["t_s"].to_numpy(),
                      {"cost rate": rate["usd_per_hour"].to_numpy()}, faults, step=True)

