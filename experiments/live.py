"""Live latency and error rate of the service under test, for steady-state probes.

Two sources, best first: the drill's own live results (a drill sets the `RUSHHOUR_LIVE`
environment variable of its experiments to its workers' part-file folder; a JSONL or parquet
file of rows shaped like `requests.parquet` works too),
which measures latency from the intended send time and so sees queueing in the load generator;
else the server's Prometheus histogram, sampled twice `window_s` apart, whose difference is the
traffic of that window.

An error is a request without an answer (status 0), a 429 or a 5xx: the service failed the
caller. 400, 413 and 422 are the caller's fault and do not count against the service.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
from chaoslib.exceptions import ActivityFailed
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel

from rushhour.experiments.client import AdminClient
from rushhour.kernel.quantiles import percentile_value

__all__ = [
    "LIVE_ENV",
    "WindowStats",
    "histogram_quantile",
    "is_error_status",
    "live_stats",
    "stats_from_file",
    "stats_from_metrics",
]

LIVE_ENV = "RUSHHOUR_LIVE"
DURATION_METRIC = "rushhour_request_duration_seconds"
REQUESTS_METRIC = "rushhour_requests_total"
TAIL_BYTES = 8 * 1024 * 1024
PARTS_READ = 64


class WindowStats(BaseModel):
    """What a window of traffic looked like; `requests == 0` means there was nothing to judge."""

    p99_ms: float
    error_rate: float
    requests: int
    window_s: float
    source: str


def live_stats(client: AdminClient, window_s: float) -> WindowStats:
    """Use the live results file when the runner provides one, else the server's metrics."""
    live = os.environ.get(LIVE_ENV, "")
    if live and Path(live).exists():
        return stats_from_file(Path(live), window_s)
    return stats_from_metrics(client, window_s)


def is_error_status(status: object) -> bool:
    text = str(status).strip().lower()
    if text.isdigit():
        code = int(text)
        return code == 0 or code == 429 or code >= 500
    return text.startswith("5") or text in {"error", "failed", "timeout", "0"}


def stats_from_file(path: Path, window_s: float) -> WindowStats:
    """The last `window_s` seconds of the results file, ending at its newest row."""
    frame = _read_rows(path)
    if frame.empty:
        return WindowStats(
            p99_ms=0.0, error_rate=0.0, requests=0, window_s=window_s, source=str(path)
        )
    times = _row_times(frame)
    recent = frame[times >= np.nanmax(times) - window_s]
    if "status" in recent:
        errors = recent["status"].map(is_error_status)
    else:
        errors = ~recent["ok"].astype(bool)
    latency = recent["latency_ms"].to_numpy(dtype=float)
    latency = latency[np.isfinite(latency)]
    p99 = percentile_value(latency, 99) if latency.size else 0.0
    return WindowStats(
        p99_ms=p99,
        error_rate=float(errors.mean()) if len(recent) else 0.0,
        requests=len(recent),
        window_s=window_s,
        source=str(path),
    )


def stats_from_metrics(client: AdminClient, window_s: float) -> WindowStats:
    """Scrape `/metrics`, wait `window_s`, scrape again, and judge the difference."""
    before = _scrape(client)
    time.sleep(window_s)
    after = _scrape(client)
    buckets = {le: after[0].get(le, 0.0) - before[0].get(le, 0.0) for le in after[0]}
    total = sum(after[1].values()) - sum(before[1].values())
    failed = sum(v for s, v in after[1].items() if is_error_status(s)) - sum(
        v for s, v in before[1].items() if is_error_status(s)
    )
    seconds = histogram_quantile(0.99, buckets.items())
    return WindowStats(
        p99_ms=seconds * 1000.0,
        error_rate=failed / total if total > 0 else 0.0,
        requests=int(total),
        window_s=window_s,
        source=f"{client.url}/metrics",
    )


def histogram_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float:
    """Prometheus' estimate of quantile `q` from cumulative (upper bound, count) buckets.

    Linear inside the bucket that holds the rank; the open `+Inf` bucket answers with the
    largest finite bound, as Prometheus does. 0.0 when the window saw no request.
    """
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return 0.0
    rank = q * ordered[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            share = (rank - lower_count) / (count - lower_count)
            return lower_bound + (bound - lower_bound) * share
        lower_bound, lower_count = bound, count
    return lower_bound


def _scrape(client: AdminClient) -> tuple[dict[float, float], dict[str, float]]:
    """Cumulative buckets summed over every label set, and request counts by status."""
    buckets: dict[float, float] = {}
    by_status: dict[str, float] = {}
    for family in text_string_to_metric_families(client.get_text("/metrics")):
        for sample in family.samples:
            if sample.name == DURATION_METRIC + "_bucket":
                le = float(sample.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + sample.value
            elif sample.name == REQUESTS_METRIC:
                status = sample.labels.get("status", sample.labels.get("code", "unknown"))
                by_status[status] = by_status.get(status, 0.0) + sample.value
    return buckets, by_status


def _read_rows(path: Path) -> pd.DataFrame:
    try:
        if path.is_dir():
            return _read_parts(path)
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        return _read_jsonl_tail(path)
    except (OSError, ValueError) as exc:
        raise ActivityFailed(f"Could not read the live results file {path}: {exc}.") from exc


def _read_parts(directory: Path) -> pd.DataFrame:
    """The newest result parts a drill's workers wrote (`part-*.parquet`), with `latency_ms`.

    A part row carries intended and end times; its latency is end minus intended, failures
    included, the way the report will count it.
    """
    parts = sorted(directory.glob("part-*.parquet"), key=lambda p: p.stat().st_mtime)[-PARTS_READ:]
    frames = [pd.read_parquet(p) for p in parts]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not frame.empty and "latency_ms" not in frame:
        frame["latency_ms"] = (frame["done_s"].astype(float) - frame["intended_s"].astype(float)) * 1000.0
    return frame


def _read_jsonl_tail(path: Path) -> pd.DataFrame:
    """Only the end of a growing JSONL file matters; a torn last line is skipped, not fatal."""
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - TAIL_BYTES))
        lines = handle.read().splitlines()
    if size > TAIL_BYTES:
        lines = lines[1:]
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return pd.DataFrame(rows)


def _row_times(frame: pd.DataFrame) -> np.ndarray:
    """When each row happened: `done_s`, else `t_s`, else the intended send time."""
    for column in ("done_s", "t_s", "intended_s"):
        if column in frame:
            times = frame[column].to_numpy(dtype=float)
            if column == "done_s" and "intended_s" in frame:
                times = np.where(np.isfinite(times), times, frame["intended_s"].to_numpy(float))
            return times
    raise ActivityFailed("The live results file has none of the columns done_s, t_s, intended_s.")
