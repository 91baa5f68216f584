"""A background thread that polls one HTTP endpoint on a steady rhythm and keeps its rows.

Both scrapers of a drill (the reference server's `/v1/status`, the target's own Prometheus
metrics) share this shape: a daemon thread, one httpx client of the target's admission (it
connects where the guard pinned the name, ignores proxy variables and never follows redirects),
a tick timed from its start so a slow answer does not stretch the rhythm, rows appended under a
lock, and failures reported through a rate-limited `ErrorReporter` that is flushed once when
polling stops. A subclass says what one tick does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import httpx

from rushhour.scenarios.protocols.admission import admitted_client

SCRAPE_INTERVAL_S = 1.0
ERROR_REPORT_EVERY_S = 10.0
JOIN_TIMEOUT_S = 5.0
TICK_FAILED = "tick"
"""The endpoint name under which a tick that raised is counted."""
log = logging.getLogger("rushhour.scraper")

__all__ = ["ERROR_REPORT_EVERY_S", "SCRAPE_INTERVAL_S", "TICK_FAILED", "ErrorReporter", "Poller"]


class ErrorReporter:
    """Failures of one scraper, reported without flooding: the first failure of an endpoint at
    once, then at most one report per `every_s` carrying the count of failures since the last."""

    def __init__(self, report: Callable[[dict[str, object]], None] | None, *,
                 every_s: float = ERROR_REPORT_EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._report = report
        self._every_s = every_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._pending: dict[str, tuple[int, str]] = {}
        self.totals: dict[str, int] = {}

    def failed(self, endpoint: str, reason: str) -> None:
        self.totals[endpoint] = self.totals.get(endpoint, 0) + 1
        count = self._pending.get(endpoint, (0, ""))[0] + 1
        self._pending[endpoint] = (count, reason)
        now = self._clock()
        if endpoint not in self._last or now - self._last[endpoint] >= self._every_s:
            self._last[endpoint] = now
            self._send(endpoint)

    def flush(self) -> None:
        """Report what the rate limit held back (called once when the scraper stops)."""
        for endpoint in list(self._pending):
            self._send(endpoint)

    def _send(self, endpoint: str) -> None:
        count, reason = self._pending.pop(endpoint)
        if self._report is not None:
            self._report({"endpoint": endpoint, "reason": reason, "errors": count, "total": self.totals[endpoint]})


class Poller:
    """Calls `tick(client)` every `interval_s` in a daemon thread until `stop()`; rows it keeps
    go through `keep`, and `rows()` copies them out under the same lock."""

    def __init__(self, url: str, *, origin: float, interval_s: float, name: str,
                 on_error: Callable[[dict[str, object]], None] | None) -> None:
        self._url = url
        self._origin = origin
        self._interval = interval_s
        self.errors = ErrorReporter(on_error)
        self.samples = 0
        self._rows: list[dict[str, object]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def client(self) -> httpx.Client:
        return admitted_client(timeout=self._interval * 0.9)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=JOIN_TIMEOUT_S)
        self.errors.flush()

    def elapsed_s(self) -> float:
        """Now on the run's clock: seconds since the origin the poller was given."""
        return time.time() - self._origin

    def tick(self, client: httpx.Client) -> object:
        raise NotImplementedError

    def keep(self, rows: list[dict[str, object]]) -> None:
        """Add one tick's rows and count the tick as a sample."""
        with self._lock:
            self._rows.extend(rows)
            self.samples += 1

    def rows(self) -> list[dict[str, object]]:
        with self._lock:
            return list(self._rows)

    def _loop(self) -> None:
        with self.client() as client:
            while not self._stop.is_set():
                began = time.monotonic()
                self._guarded_tick(client)
                self._stop.wait(max(0.0, self._interval - (time.monotonic() - began)))

    def _guarded_tick(self, client: httpx.Client) -> None:
        """One tick that cannot end the thread: whatever a tick or a handler raises (a target's
        answer nobody foresaw) costs that tick, and is logged and reported as the tick's failure."""
        try:
            self.tick(client)
        except Exception as exc:
            log.warning("%s: a tick failed", self._thread.name, exc_info=True)
            self.errors.failed(TICK_FAILED, f"A tick of {self._thread.name} failed: {type(exc).__name__}: {exc}"[:500])
