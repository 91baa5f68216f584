"""Scrape GET /v1/status once a second into `server_metrics.parquet` rows (one per pool).

Runs in a thread of the runner: it must keep its 1 s rhythm while the runner's loop is busy
merging parts, and a slow or dead server must cost one missed sample, never the run. A failed
scrape is never silent: `on_error` hears of it (rate-limited, see `rushhour.scenarios.run.poller.ErrorReporter`), so the run's
timeline says which samples and server events are missing and why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pandas as pd

from rushhour.kernel.atomic import write_parquet_atomic
from rushhour.kernel.contract import SERVER_METRICS_COLUMNS
from rushhour.scenarios.run.poller import SCRAPE_INTERVAL_S, Poller
from rushhour.scenarios.run.target_events import MalformedTargetEvent, TargetEvent, read_target_event

METRIC_COLUMNS = tuple(SERVER_METRICS_COLUMNS)
STATUS_PATH = "/v1/status"
EVENTS_PATH = "/v1/events"
MALFORMED_EVENTS = "/v1/events (malformed)"
"""The name under which a target's unreadable event entries are counted."""
MAX_EVENTS_PER_TICK = 2000


def _pool_provider(status: dict, pool: str) -> str:
    """The execution provider a pool's nodes report (the server-wide one if none says)."""
    for node in status.get("nodes") or []:
        if node.get("pool") == pool and node.get("provider"):
            return str(node["provider"])
    return str(status.get("provider") or "")


def _pool_batching(status: dict, pool: str) -> str:
    """How a pool's nodes batch, as the first node that says reports it ("" when none does)."""
    for node in status.get("nodes") or []:
        if node.get("pool") == pool and node.get("batching") not in (None, "", "unknown"):
            return str(node["batching"])
    return ""


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
            "provider": _pool_provider(status, name), "batching": _pool_batching(status, name), **shared,
        })
    return rows


def metrics_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """Rows as a frame with exactly the contract's columns (typed even when empty)."""
    frame = pd.DataFrame(rows, columns=list(METRIC_COLUMNS))
    return frame.astype({name: str if dtype == "object" else dtype for name, dtype in SERVER_METRICS_COLUMNS.items()})


class StatusScraper(Poller):
    """Polls `<base>/v1/status` once a second (one row per pool) and hands the target's own
    events, read by `rushhour.scenarios.run.target_events`, to `on_server_event`."""

    def __init__(
        self, base_url: str, *, origin: float, interval_s: float = SCRAPE_INTERVAL_S,
        on_server_event: Callable[[TargetEvent], None] | None = None,
        on_error: Callable[[dict[str, object]], None] | None = None,
    ) -> None:
        self._base = base_url.rstrip("/")
        super().__init__(self._base, origin=origin, interval_s=interval_s, name="status-scraper", on_error=on_error)
        self._status_url = self._base + STATUS_PATH
        self._events_url = self._base + EVENTS_PATH
        self._on_server_event = on_server_event
        self._last_seq = 0
        self.last_status: dict | None = None

    @property
    def failures(self) -> int:
        return sum(self.errors.totals.values())

    def tick(self, client: httpx.Client) -> None:
        self._scrape(client)

    def _scrape(self, client: httpx.Client) -> None:
        t_s = self.elapsed_s()
        status = self._get_json(client, STATUS_PATH, self._status_url)
        if not isinstance(status, dict):
            return
        self.keep(status_rows(status, self.last_status, t_s))
        self.last_status = status
        self._pull_events(client)

    def _get_json(self, client: httpx.Client, endpoint: str, url: str, **params: int | str) -> object:
        """The JSON body of a 2xx answer; any other outcome is reported and gives None."""
        try:
            response = client.get(url, params=params or None)
        except httpx.HTTPError as exc:
            self.errors.failed(endpoint, f"GET {url} failed: {type(exc).__name__}: {exc}")
            return None
        if response.status_code == 404 and endpoint == EVENTS_PATH:
            return {"missing": True}
        if not response.is_success:
            self.errors.failed(endpoint, f"GET {url} answered {response.status_code} ({response.text[:200]!r}).")
            return None
        try:
            return response.json()
        except ValueError:
            self.errors.failed(endpoint, f"GET {url} answered {response.status_code} with a body that is not JSON.")
            return None

    def _pull_events(self, client: httpx.Client) -> None:
        """Copy the target's own events (scale, node down/ready, breaker) into the drill's log,
        at most `MAX_EVENTS_PER_TICK` a tick. A target without /v1/events (404: not the reference
        server) just has none; an entry that cannot be read is counted as malformed and skipped."""
        if self._on_server_event is None:
            return
        body = self._get_json(client, EVENTS_PATH, self._events_url, after=self._last_seq)
        if isinstance(body, dict) and body.get("missing"):
            self._on_server_event = None
            return
        events = body.get("events") if isinstance(body, dict) else None
        if body is not None and not isinstance(events, list):
            self.errors.failed(EVENTS_PATH, f'GET {self._events_url} answered a body without an "events" list.')
            return
        now = time.time()
        for entry in (events or [])[:MAX_EVENTS_PER_TICK]:
            try:
                event = read_target_event(entry, now=now)
            except MalformedTargetEvent as exc:
                self.errors.failed(MALFORMED_EVENTS, f"GET {self._events_url} answered a malformed event: {exc}")
                continue
            self._last_seq = max(self._last_seq, event.seq)
            self._on_server_event(event)

    def summary(self) -> dict[str, object]:
        """Samples taken and failures per endpoint, for the run's `scraper` event."""
        return {"samples": self.samples, "errors": dict(self.errors.totals), "failed": self.failures}

    def frame(self) -> pd.DataFrame:
        return metrics_frame(self.rows())

    def write(self, path: Path) -> None:
        write_parquet_atomic(self.frame(), path)

