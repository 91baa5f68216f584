"""What each pool had left: healthy nodes per pool and second, from server_metrics.parquet.

A node is healthy when it is ready and its circuit breaker is not open: a partitioned node is
still "ready" to its supervisor, but the gateway cannot use it. A pool's full strength is the
most healthy nodes it had before the window in question (the whole run if nothing came before).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["healthy_nodes", "pool_low"]


def healthy_nodes(metrics: pd.DataFrame | None) -> pd.DataFrame:
    """Healthy nodes, one column per pool, indexed by scrape time (empty without metrics).

    Scrapes without `nodes_ready` (older results) count the nodes alive instead."""
    if metrics is None or metrics.empty or not {"t_s", "pool"} <= set(metrics.columns):
        return pd.DataFrame()
    column = next((c for c in ("nodes_ready", "nodes_alive") if c in metrics.columns), None)
    if column is None:
        return pd.DataFrame()
    ready = metrics[column].astype(float)
    broken = metrics["breakers_open"].astype(float) if "breakers_open" in metrics else 0.0
    frame = pd.DataFrame({"t_s": metrics["t_s"].astype(float), "pool": metrics["pool"].astype(str),
                          "healthy": np.clip(ready - broken, 0.0, None)})
    return frame.pivot_table(index="t_s", columns="pool", values="healthy", aggfunc="min").sort_index()


def pool_low(healthy: pd.DataFrame, start_s: float, end_s: float) -> list[dict[str, Any]]:
    """Per pool that lost nodes in [start_s, end_s]: full strength, the lowest, and when.

    `low_s` is how long it sat at the lowest (scrapes x interval); `low_from_s`/`low_to_s` bound
    those scrapes (the next scrape ends the last).
    """
    if healthy.empty:
        return []
    times = healthy.index.to_numpy(float)
    inside = (times >= start_s) & (times <= end_s)
    before = times < start_s
    step = float(np.median(np.diff(times))) if times.size > 1 else 1.0
    rows = []
    for pool in healthy.columns:
        values = healthy[pool].to_numpy(float)
        if not inside.any() or np.isnan(values[inside]).all():
            continue
        reference = values[before] if before.any() and not np.isnan(values[before]).all() else values
        full, low = float(np.nanmax(reference)), float(np.nanmin(values[inside]))
        if low >= full:
            continue
        at_low = np.flatnonzero(inside & (values == low))
        after = np.flatnonzero(times > times[at_low[-1]])
        rows.append({"pool": str(pool), "full": int(full), "lowest": int(low),
                     "low_s": at_low.size * step, "low_from_s": float(times[at_low[0]]),
                     "low_to_s": float(times[after[0]]) if after.size else float(times[at_low[-1]])})
    return rows
