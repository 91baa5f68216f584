"""What the search asks the target between and during steps: its pools' state, and calm.

`StatusSampler` reads `GET /v1/status` once a second during a step (pool sizes, busy slots,
queues) for utilisation and cost at each rate; `settle` waits, bounded, until the queues a
previous step left behind have drained, so each step starts from the same quiet service. A
target without `/v1/status` (not the reference server) simply has no samples and a short pause.
"""

from __future__ import annotations

import time

import httpx
import pandas as pd

from rushhour.scenarios.protocols.admission import admitted_client
from rushhour.scenarios.run.poller import Poller

__all__ = ["SAMPLE_COLUMNS", "StatusSampler", "fetch_status", "settle"]

SAMPLE_COLUMNS = ("t_s", "pool", "nodes_alive", "nodes_ready", "slots_busy", "inflight", "queue_depth")
SETTLE_LIMIT_S = 30.0
QUIET_PAUSE_S = 1.0


def fetch_status(client: httpx.Client, url: str) -> dict | None:
    """The target's /v1/status document, or None when it has none or did not answer."""
    try:
        response = client.get(f"{url}/v1/status")
        if response.status_code != 200:
            return None
        data = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _busy(status: dict) -> int:
    pools = status.get("pools") or {}
    jobs = status.get("jobs") or {}
    active = int(jobs.get("active", 0)) if isinstance(jobs, dict) else 0
    return active + sum(int(p.get("queue_depth", 0)) + int(p.get("inflight", 0)) for p in pools.values())


def settle(url: str, *, limit_s: float = SETTLE_LIMIT_S) -> float:
    """Wait until the target has nothing queued or in flight (at most `limit_s`); seconds waited."""
    began = time.monotonic()
    with admitted_client(timeout=2.0) as client:
        status = fetch_status(client, url)
        if status is None:
            time.sleep(QUIET_PAUSE_S)
            return time.monotonic() - began
        while _busy(status) > 0 and time.monotonic() - began < limit_s:
            time.sleep(0.25)
            status = fetch_status(client, url) or {}
    return time.monotonic() - began


class StatusSampler(Poller):
    """A background thread sampling the target's pools once a second, timed on the step clock.
    A target without /v1/status is asked once: with no first sample there is nothing to sample."""

    def __init__(self, url: str, *, origin: float, interval_s: float = 1.0) -> None:
        super().__init__(url.rstrip("/"), origin=origin, interval_s=interval_s, name="capacity-sampler",
                         on_error=None)

    def start(self) -> StatusSampler:  # type: ignore[override]
        super().start()
        return self

    def tick(self, client: httpx.Client) -> None:
        status = fetch_status(client, self._url)
        if status is None and not self.samples:
            self._stop.set()
            return
        if status is not None:
            t_s = self.elapsed_s()
            self.keep([{"t_s": t_s, "pool": str(name), **{k: int(pool.get(k, 0)) for k in SAMPLE_COLUMNS[2:]}}
                       for name, pool in sorted((status.get("pools") or {}).items()) if isinstance(pool, dict)])

    def stop(self) -> pd.DataFrame:  # type: ignore[override]
        """Stop sampling and return every sample (typed, possibly empty)."""
        super().stop()
        return self.snapshot()

    def snapshot(self) -> pd.DataFrame:
        """Every sample so far (typed, possibly empty), sampling on."""
        frame = pd.DataFrame(self.rows(), columns=list(SAMPLE_COLUMNS))
        return frame.astype({"t_s": float, "pool": str, **dict.fromkeys(SAMPLE_COLUMNS[2:], "int64")})
