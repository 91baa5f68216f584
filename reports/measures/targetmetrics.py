"""The target's own metrics (`target_metrics.parquet`) turned into time series and a summary section.

Inference servers publish the state a client cannot see: requests running and waiting, how full
the KV cache is, how often the prefix cache hits, tokens per second. The series recognised here
by name, from vLLM (v0 and v1 names), TGI, Triton (and its TensorRT-LLM backend) and SGLang, are
grouped into four charts; a scenario's `target.metrics` names any other sample to chart. Gauges
are read as they are; counters (`*_total`, and sums) become per-second rates between scrapes,
a counter reset giving a gap rather than a negative rate.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from rushhour.reports.rundata.results import RunData

Reading = Literal["gauge", "rate"]
CHARTS: dict[str, tuple[str, str, Literal["sum", "mean"]]] = {
    "target_requests": ("Target: requests running and waiting", "requests", "sum"),
    "target_kv_cache": ("Target: KV-cache usage", "share of KV cache in use", "mean"),
    "target_prefix_cache": ("Target: prefix-cache hits", "hit ratio", "mean"),
    "target_tokens": ("Target: tokens per second", "tokens/s", "sum"),
}
"""Chart key -> (title, y label, how the label sets of one sample name are combined)."""

RECOGNISED: dict[str, tuple[str, str, Reading]] = {
    "vllm:num_requests_running": ("target_requests", "running (vLLM)", "gauge"),
    "vllm:num_requests_waiting": ("target_requests", "waiting (vLLM)", "gauge"),
    "tgi_batch_current_size": ("target_requests", "running (TGI batch)", "gauge"),
    "tgi_queue_size": ("target_requests", "waiting (TGI queue)", "gauge"),
    "nv_inference_pending_request_count": ("target_requests", "waiting (Triton pending)", "gauge"),
    "sglang:num_running_reqs": ("target_requests", "running (SGLang)", "gauge"),
    "sglang:num_queue_reqs": ("target_requests", "waiting (SGLang)", "gauge"),
    "vllm:gpu_cache_usage_perc": ("target_kv_cache", "KV cache (vLLM)", "gauge"),
    "vllm:kv_cache_usage_perc": ("target_kv_cache", "KV cache (vLLM)", "gauge"),
    "sglang:token_usage": ("target_kv_cache", "KV cache (SGLang)", "gauge"),
    "vllm:gpu_prefix_cache_hit_rate": ("target_prefix_cache", "prefix-cache hit ratio (vLLM)", "gauge"),
    "sglang:cache_hit_rate": ("target_prefix_cache", "prefix-cache hit ratio (SGLang)", "gauge"),
    "vllm:generation_tokens_total": ("target_tokens", "generated (vLLM)", "rate"),
    "vllm:prompt_tokens_total": ("target_tokens", "prompt (vLLM)", "rate"),
    "sglang:generation_tokens_total": ("target_tokens", "generated (SGLang)", "rate"),
    "sglang:prompt_tokens_total": ("target_tokens", "prompt (SGLang)", "rate"),
    "sglang:gen_throughput": ("target_tokens", "generated (SGLang gauge)", "gauge"),
    "tgi_request_generated_tokens_sum": ("target_tokens", "generated (TGI)", "rate"),
    "tgi_request_input_length_sum": ("target_tokens", "prompt (TGI)", "rate"),
}
"""Sample name -> (chart, line label, how it is read)."""

HIT_RATIOS: dict[tuple[str, str], str] = {
    ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"): "prefix-cache hit ratio (vLLM)",
    ("vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"): "prefix-cache hit ratio (vLLM)",
}
"""Counter pairs (hits, queries) whose rates divide into a hit ratio per scrape interval."""


def combined(frame: pd.DataFrame, metric: str, how: Literal["sum", "mean"] = "sum") -> pd.Series:
    """One sample name over time, its label sets summed (or averaged), indexed by t_s."""
    rows = frame[frame["metric"] == metric]
    grouped = rows.groupby("t_s")["value"]
    return (grouped.sum() if how == "sum" else grouped.mean()).sort_index()


def rate(series: pd.Series) -> pd.Series:
    """Per-second increase of a counter between scrapes (NaN at the first scrape and at a reset)."""
    times = series.index.to_numpy(float)
    values = series.to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_s = np.diff(values) / np.diff(times)
    per_s[per_s < 0] = np.nan
    return pd.Series(np.concatenate([[np.nan], per_s]), index=series.index)


def hit_ratio(frame: pd.DataFrame, hits: str, queries: str) -> pd.Series:
    """Hits per query within each scrape interval (NaN where no query came)."""
    gained, asked = rate(combined(frame, hits)), rate(combined(frame, queries))
    asked = asked.reindex(gained.index)
    return (gained / asked.where(asked > 0)).astype(float)


def recognised_series(frame: pd.DataFrame) -> dict[str, dict[str, pd.Series]]:
    """Chart key -> line label -> series, for every recognised name the target published."""
    present = set(frame["metric"].unique())
    charts: dict[str, dict[str, pd.Series]] = {}
    for metric, (chart, label, reading) in RECOGNISED.items():
        if metric in present:
            series = combined(frame, metric, CHARTS[chart][2])
            charts.setdefault(chart, {})[label] = rate(series) if reading == "rate" else series
    for (hits, queries), label in HIT_RATIOS.items():
        if hits in present and queries in present:
            charts.setdefault("target_prefix_cache", {})[label] = hit_ratio(frame, hits, queries)
    return charts


def named_series(frame: pd.DataFrame, metric: str, max_lines: int = 8) -> dict[str, pd.Series]:
    """A scenario-named sample, one line per label set (the first `max_lines`); a counter as a rate."""
    rows = frame[frame["metric"] == metric]
    lines: dict[str, pd.Series] = {}
    for labels, group in list(rows.groupby("labels", sort=True))[:max_lines]:
        series = group.set_index("t_s")["value"].sort_index()
        counter = metric.endswith(("_total", "_sum", "_count"))
        lines[f"{metric} {labels}" if labels != "{}" else metric] = rate(series) if counter else series
    return lines


def target_metrics_section(run: RunData) -> dict[str, Any] | None:
    """summary.json's `target_metrics`: where they came from, how the scrape went, what was found."""
    url = run.scenario.target.metrics_url
    if not url and run.target_metrics is None:
        return None
    scrape = next(iter(run.events_of("target_metrics")[-1:]), {})
    errors = run.events_of("target_metrics_error")
    frame = run.target_metrics
    present = set(frame["metric"].unique()) if frame is not None else set()
    return {
        "url": url, "scrapes": scrape.get("samples"), "failed": scrape.get("failed", sum(int(e.get("errors", 1)) for e in errors)),
        "dropped_series_samples": scrape.get("dropped_series_samples"),
        "errors": [{"t_s": e.get("t_s"), "reason": e.get("reason"), "errors": e.get("errors")} for e in errors[:20]],
        "recognised": sorted(metric for metric in present if metric in RECOGNISED
                             or any(metric in pair for pair in HIT_RATIOS)),
        "named": [{"metric": name, "found": name in present} for name in run.scenario.target.metrics],
    }
