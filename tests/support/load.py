"""A bounded, open-loop load loop for integration tests: requests at a fixed rate from a
thread pool, to a loopback server only, capped in count and in time."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx

MAX_REQUESTS = 3000


@dataclass(frozen=True)
class Outcome:
    index: int
    sent_s: float  # seconds after the loop started
    latency_s: float  # client-measured, from send to answer
    status: int  # 0 when no HTTP answer came back
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == 200


def run_load(
    url: str,
    body_for: Callable[[int], dict[str, Any]],
    *,
    rate_per_s: float,
    duration_s: float,
    workers: int = 64,
    timeout_s: float = 30.0,
    path: str = "/v1/translate",
) -> list[Outcome]:
    """Send `rate_per_s * duration_s` requests (at most MAX_REQUESTS) on schedule; wait for all."""
    if urlparse(url).hostname != "127.0.0.1":
        raise ValueError(f'Test load goes to 127.0.0.1 only, not "{url}".')
    count = min(MAX_REQUESTS, int(rate_per_s * duration_s))
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    with httpx.Client(base_url=url, timeout=timeout_s, limits=limits) as client, concurrent.futures.ThreadPoolExecutor(workers) as pool:
        started = time.monotonic()

        def one(index: int) -> Outcome:
            sent = time.monotonic()
            try:
                response = client.post(path, json=body_for(index))
            except httpx.HTTPError:
                return Outcome(index, sent - started, time.monotonic() - sent, 0)
            latency = time.monotonic() - sent
            try:
                body = response.json()
            except ValueError:
                body = {}
            return Outcome(index, sent - started, latency, response.status_code, body if isinstance(body, dict) else {})

        futures = []
        for index in range(count):
            delay = started + index / rate_per_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(one, index))
        return [f.result() for f in futures]


def start_load(url: str, body_for: Callable[[int], dict[str, Any]], **kwargs: Any) -> concurrent.futures.Future[list[Outcome]]:
    """`run_load` in the background; `.result()` gives its outcomes."""
    runner = concurrent.futures.ThreadPoolExecutor(1)
    future = runner.submit(run_load, url, body_for, **kwargs)
    runner.shutdown(wait=False)
    return future


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        raise ValueError("No values to take a percentile of.")
    return ordered[min(len(ordered) - 1, int(q / 100.0 * len(ordered)))]
