"""Dollars per thousand translated characters, from node-seconds and a dated price list.

Node-seconds integrate `nodes_alive` over scrape time (each scrape holds until the next; the last
holds for the median interval), inside the schedule window only (rushhour.reports.rundata.window), so boot and
teardown do not inflate the bill. A pool's dollars are shared among the characters that pool
served (`model` column), so the paid tier pays for the GPU it used; a pool that served nothing
is overhead and is shared by all characters.

Two per-character prices: per 1k characters *served* (every successful answer, cache hits
included: what the service delivered) and per 1k characters *computed* (successful answers that
were not cache hits: what the model actually translated). A cache hit costs no compute, so the
second is the price of translation itself and the gap between them is what the cache saved.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.schema import CostModel


def node_intervals(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per scrape row: pool, start, length and nodes alive, as a flat interval table."""
    frame = metrics[["t_s", "pool", "nodes_alive"]].dropna().sort_values(["pool", "t_s"])
    following = frame.groupby("pool")["t_s"].shift(-1)
    gaps = following - frame["t_s"]
    median = float(gaps.median()) if gaps.notna().any() else 1.0
    return pd.DataFrame({
        "pool": frame["pool"].astype(str).to_numpy(),
        "start": frame["t_s"].to_numpy(float),
        "length": gaps.fillna(median).to_numpy(float),
        "nodes": frame["nodes_alive"].to_numpy(float),
    })


def node_seconds(intervals: pd.DataFrame, start: float = -np.inf,
                 end: float = np.inf) -> dict[str, float]:
    """Node-seconds per pool within [start, end)."""
    lo = np.maximum(intervals["start"], start)
    hi = np.minimum(intervals["start"] + intervals["length"], end)
    weighted = intervals["nodes"] * np.clip(hi - lo, 0, None)
    return {str(k): float(v) for k, v in weighted.groupby(intervals["pool"]).sum().items()}


def compute_cost(requests: pd.DataFrame, metrics: pd.DataFrame | None, model: CostModel | None,
                 fault_windows: list[tuple[float, float]], *,
                 window: tuple[float, float] = (-np.inf, np.inf)) -> dict[str, Any]:
    """The cost section of summary.json; `known` is False with a reason when it cannot be told.

    `window` bounds the node-seconds (the schedule window); characters are those of the ok rows.
    """
    ok = requests[requests["ok"]]
    chars = int(ok["chars"].sum())
    computed = int(ok["chars"].to_numpy()[~ok["cached"].to_numpy(dtype=bool)].sum()) if "cached" in ok else chars
    base: dict[str, Any] = {"known": False, "total_usd": None, "chars": chars, "chars_served": chars,
                            "chars_computed": computed, "usd_per_1k_chars": None,
                            "usd_per_1k_chars_served": None, "usd_per_1k_chars_computed": None,
                            "window_s": [_finite_or_none(window[0]), _finite_or_none(window[1])],
                            "by_pool": []}
    if model is None:
        return base | {"reason": "the scenario has no cost model"}
    base |= {"source": model.source, "date": model.date,
             "managed_api_usd_per_1k_chars": model.managed_api_usd_per_1k_chars}
    if metrics is None or "nodes_alive" not in metrics.columns or "pool" not in metrics.columns:
        return base | {"reason": "server_metrics.parquet with nodes_alive per pool is missing"}
    intervals = node_intervals(metrics)
    pools = _pool_costs(node_seconds(intervals, *window), model, ok)
    return base | _totals(pools, chars, computed, model) | {
        "known": True, "reason": None, "by_pool": pools,
        "by_priority": _allocate(ok, pools, "priority"), "by_mode": _allocate(ok, pools, "mode"),
        "during_faults": _fault_cost(intervals, model, requests, fault_windows),
    }


def _finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _pool_costs(seconds: dict[str, float], model: CostModel, ok: pd.DataFrame) -> list[dict[str, Any]]:
    served = ok.groupby("model")["chars"].sum()
    computed = ok[~ok["cached"].astype(bool)].groupby("model")["chars"].sum() if "cached" in ok else served
    rows = []
    for pool, node_s in sorted(seconds.items()):
        price = model.pools.get(pool)
        usd = node_s / 3600.0 * price.usd_per_node_hour if price else None
        rows.append({"pool": pool, "kind": price.kind if price else None,
                     "node_seconds": node_s, "usd_per_node_hour": price.usd_per_node_hour if price else None,
                     "usd": usd, "chars_served": int(served.get(pool, 0)),
                     "chars_computed": int(computed.get(pool, 0))})
    return rows


def _totals(pools: list[dict[str, Any]], chars: int, computed: int, model: CostModel) -> dict[str, Any]:
    unpriced = [row["pool"] for row in pools if row["usd"] is None]
    total = float(sum(row["usd"] for row in pools if row["usd"] is not None))
    per_1k = total / chars * 1000.0 if chars else None
    managed = model.managed_api_usd_per_1k_chars
    ratio = per_1k / managed if per_1k is not None and managed else None
    return {"total_usd": total, "usd_per_1k_chars": per_1k, "usd_per_1k_chars_served": per_1k,
            "usd_per_1k_chars_computed": total / computed * 1000.0 if computed else None,
            "node_seconds": float(sum(row["node_seconds"] for row in pools)),
            "unpriced_pools": unpriced, "vs_managed_ratio": ratio}


def _allocate(ok: pd.DataFrame, pools: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Dollars per class of `key`: each pool's cost split by the characters it served."""
    table = ok.pivot_table(index=key, columns="model", values="chars", aggfunc="sum", fill_value=0)
    class_chars = table.sum(axis=1).astype(float)
    usd = pd.Series(0.0, index=table.index)
    for row in pools:
        if row["usd"] is None or class_chars.sum() == 0:
            continue
        served = table[row["pool"]] if row["pool"] in table.columns else None
        share = served / served.sum() if served is not None and served.sum() > 0 else class_chars / class_chars.sum()
        usd += row["usd"] * share
    return [{key: str(name), "chars": int(class_chars[name]), "usd": float(usd[name]),
             "usd_per_1k_chars": float(usd[name] / class_chars[name] * 1000) if class_chars[name] else None}
            for name in table.index]


def _fault_cost(intervals: pd.DataFrame, model: CostModel, requests: pd.DataFrame,
                windows: list[tuple[float, float]]) -> dict[str, Any]:
    usd, chars = 0.0, 0
    intended = requests["intended_s"].to_numpy()
    ok = requests["ok"].to_numpy()
    for start, end in merged_windows(windows):
        for pool, node_s in node_seconds(intervals, start, end).items():
            price = model.pools.get(pool)
            usd += node_s / 3600.0 * price.usd_per_node_hour if price else 0.0
        chars += int(requests["chars"].to_numpy()[ok & (intended >= start) & (intended < end)].sum())
    return {"usd": usd, "chars": chars, "usd_per_1k_chars": usd / chars * 1000 if chars else None}


def merged_windows(windows: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping windows joined, so time inside two faults at once is counted once."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def cost_rate(metrics: pd.DataFrame, model: CostModel) -> pd.DataFrame:
    """Dollars per hour at every scrape, summed over priced pools (for the cost-rate chart)."""
    prices = metrics["pool"].astype(str).map(
        {name: price.usd_per_node_hour for name, price in model.pools.items()}).fillna(0.0)
    rate = (metrics["nodes_alive"].astype(float) * prices).groupby(metrics["t_s"]).sum()
    return pd.DataFrame({"t_s": rate.index.to_numpy(float), "usd_per_hour": rate.to_numpy(float)})
