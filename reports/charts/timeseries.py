"""Per-bin series for the time charts: rates, latency percentiles, server gauges.

Everything is binned with bincount and one lexsort (no groupby-apply), so a million requests
bin in well under a second.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from rushhour.reports.estimate.intervals import grouped_percentiles
from rushhour.reports.measures.faults import SHED_STATUSES
from rushhour.reports.rundata.attempts import attempt_values

NICE_BINS_S = (0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
TARGET_BINS = 120
LENGTH_BUCKETS = (0, 50, 200, 1000, 5000)


def bin_width(duration_s: float) -> float:
    """The smallest readable bin giving at most about TARGET_BINS points."""
    wanted = duration_s / TARGET_BINS
    return float(next((width for width in NICE_BINS_S if width >= wanted), NICE_BINS_S[-1]))


def request_series(requests: pd.DataFrame, duration_s: float) -> pd.DataFrame:
    """Offered/achieved/shed/error rates, degrade share and P50/P95/P99 per time bin."""
    width = bin_width(duration_s)
    n_bins = max(1, int(np.ceil(duration_s / width)))
    intended = _bins(requests["intended_s"].to_numpy(), width, n_bins)
    done = _bins(requests["done_s"].to_numpy(), width, n_bins)
    ok = requests["ok"].to_numpy()
    shed = np.isin(requests["status"].to_numpy(), SHED_STATUSES)
    count = _counter(n_bins)
    offered = count(intended, None)
    frame = pd.DataFrame({
        "t_s": np.arange(n_bins) * width,
        "offered_rps": offered / width,
        "achieved_rps": count(done, ok) / width,
        "shed_rps": count(intended, shed) / width,
        "error_rps": count(intended, ~ok & ~shed) / width,
        "error_rate": _ratio(count(intended, ~ok), offered),
        "degrade_rate": _ratio(count(intended, ok & requests["degraded"].to_numpy()), count(intended, ok)),
    })
    latency = attempt_values(requests)
    for percentile in (50, 95, 99):
        frame[f"p{percentile}_ms"], _ = grouped_percentiles(intended, latency, percentile, n_bins)
    return frame


def _bins(times: np.ndarray, width: float, n_bins: int) -> np.ndarray:
    index = np.where(np.isnan(times), -1, np.floor(np.nan_to_num(times, nan=-1.0) / width))
    return np.where(index >= 0, np.minimum(index, n_bins - 1), -1).astype(np.int64)


def _counter(n_bins: int) -> Callable[[np.ndarray, np.ndarray | None], np.ndarray]:
    """A bincount over n_bins that skips unbinned (-1) entries and honours a mask."""
    def count(index: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        keep = index >= 0 if mask is None else (index >= 0) & mask
        return np.bincount(index[keep], minlength=n_bins).astype(float)
    return count


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / bottom, np.nan)


def pool_series(metrics: pd.DataFrame, column: str) -> pd.DataFrame:
    """One column per pool of a per-pool gauge, indexed by scrape time (empty if absent)."""
    if column not in metrics.columns or "pool" not in metrics.columns:
        return pd.DataFrame()
    return metrics.pivot_table(index="t_s", columns="pool", values=column, aggfunc="mean")


def cache_hit_ratio(metrics: pd.DataFrame) -> pd.Series:
    """Hit ratio between consecutive scrapes from the cumulative counters; NaN across resets."""
    needed = {"cache_hits_total", "cache_misses_total"}
    if not needed <= set(metrics.columns):
        return pd.Series(dtype=float)
    scrapes = metrics.groupby("t_s")[sorted(needed)].max().sort_index()
    deltas = scrapes.diff()
    lookups = deltas["cache_hits_total"] + deltas["cache_misses_total"]
    ratio = deltas["cache_hits_total"] / lookups.where(lookups > 0)
    return ratio.where((deltas >= 0).all(axis=1))


def latency_by_length(requests: pd.DataFrame) -> pd.DataFrame:
    """P50/P95/P99 latency of attempted requests per text-length bucket, with sample counts."""
    edges = np.array(LENGTH_BUCKETS[1:])
    groups = np.searchsorted(edges, requests["chars"].to_numpy(), side="right")
    latency = attempt_values(requests)
    labels = [f"{lo}-{hi - 1}" for lo, hi in zip(LENGTH_BUCKETS, LENGTH_BUCKETS[1:])]
    labels.append(f"{LENGTH_BUCKETS[-1]}+")
    frame = pd.DataFrame({"bucket": labels})
    for percentile in (50, 95, 99):
        frame[f"p{percentile}_ms"], counts = grouped_percentiles(groups, latency, percentile, len(labels))
    frame["samples"] = counts
    return frame
