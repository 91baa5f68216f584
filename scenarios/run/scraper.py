"""Scrape GET /v1/status once a second into `server_metrics.parquet` rows (one per pool).

Runs in a thread of the runner: it must keep its 1 s rhythm while the runner's loop is busy
merging parts, and a slow or dead server must cost one missed sample, never the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pandas as pd

METRIC_COLUMNS = (
    "t_s", "pool", "nodes_alive", "nodes_ready", "breakers_open", "queue_depth", "inflight",
    "batch_size_mean", "provider", "cache_hits_total", "cache_misses_total", "shed_total",
    "requests_total",
)
SCRAPE_INTERVAL_S = 1.0


def _pool_provider(status: dict, pool: str) -> str:
    """The execution provider a pool's nodes report (the server-wide one if none says)."""
    for node in status.get("nodes") or []:
        if node.get("pool") == pool and node.get("provider"):
            return str(node["provider"])
    return str(status.get("provider") or "")


def _batch_mean(pool: dict, before: dict | None) -> float:
    """Mean batch size over the scrape interval, from the cumulative counters' deltas."""
    if before is None:
        return float("nan")
    batches = int(pool.get("batches_total", 0)) - int(before.get("batches_total", 0))
    items = int(pool.get("batch_items_total", 0)) - int(before.get("batch_items_total", 0))
    return items / batches if batches > 0 else float("nan")


def status_rows(status: dict, previous: dict | None, t_s: float) -> list[dict[str, object]]:
    """The rows of one scrape: one per pool, gateway-wide counters repeated on each."""
    cache = status.get("cache") or {}
    shared = {
        "cache_hits_total": int(cache.get("hits", 0)),
        "cache_misses_total": int(cache.get("misses", 0)),
        "shed_total": int(sum((status.get("shed") or {}).values())),
        "requests_total": int(status.get("requests_total", 0)),
    }
    before = (previous or {}).get("pools") or {}
    rows = []
    for name, pool in sorted((status.get("pools") or {}).items()):
        rows.append({
            "t_s": float(t_s), "pool": name,
            **{k: int(pool.get(k, 0)) for k in ("nodes_alive", "nodes_ready", "breakers_open",
                                                 "queue_depth", "inflight")},
            "batch_size_mean": _batch_mean(pool, before.get(name) if previous else None),
            "provider": _pool_provider(status, name), **shared,
        })
    return rows


def metrics_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """Rows as a frame with exactly the contract's columns (typed even when empty)."""
    frame = pd.DataFrame(rows, columns=list(METRIC_COLUMNS))
    ints = [c for c in METRIC_COLUMNS if c not in ("t_s", "pool", "provider", "batch_size_mean")]
    frame[ints] = frame[ints].astype("int64")
    frame[["t_s", "batch_size_mean"]] = frame[["t_s", "batch_size_mean"]].astype(float)
    frame[["pool", "provider"]] = frame[["pool", "provider"]].astype(str)
    return frame


class StatusScraper:
    """Background thread polling `<base>/v1/status`; `rows` grows by one scrape per second."""

    def __init__(
        self, base_url: str, *, origin: float, interval_s: float = SCRAPE_INTERVAL_S,
        on_server_event: Callable[[dict], None] | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + "/v1/status"
        self._events_url = base_url.rstrip("/") + "/v1/events"
        self._on_server_event = on_server_event
        self._last_seq = 0
        self._origin = origin
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="status-scraper", daemon=True)
        self._lock = threading.Lock()
        self._rows: list[dict[str, object]] = []
        self.last_status: dict | None = None
        self.failures = 0

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        with httpx.Client(timeout=self._interval * 0.9) as client:
            while not self._stop.is_set():
                began = time.monotonic()
                self._scrape(client)
                self._stop.wait(max(0.0, self._interval - (time.monotonic() - began)))

    def _scrape(self, client: httpx.Client) -> None:
        t_s = time.time() - self._origin
        try:
            response = client.get(self._url)
            response.raise_for_status()
            status = response.json()
        except (httpx.HTTPError, ValueError):
            self.failures += 1
            return
        rows = status_rows(status, self.last_status, t_s)
        with self._lock:
            self._rows.extend(rows)
        self.last_status = status
        self._pull_events(client)

    def _pull_events(self, client: httpx.Client) -> None:
        """Copy the server's own events (scale, node down/ready, breaker) into the drill's log.
        A target without /v1/events (not the reference server) just has none."""
        if self._on_server_event is None:
            return
        try:
            response = client.get(self._events_url, params={"after": self._last_seq})
            if response.status_code == 404:
                self._on_server_event = None
                return
            events = response.json().get("events", [])
        except (httpx.HTTPError, ValueError, AttributeError):
            return
        for event in events:
            self._last_seq = max(self._last_seq, int(event.get("seq", 0)))
            self._on_server_event(event)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def frame(self) -> pd.DataFrame:
        with self._lock:
            return metrics_frame(list(self._rows))

    def write(self, path: Path) -> None:
        self.frame().to_parquet(path, index=False)
