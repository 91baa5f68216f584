"""A circuit breaker per node: failure and slow-call rates over a sliding window of calls.

closed --(rate over threshold, with at least `min_calls` in the window)--> open
open --(after `open_s`)--> half_open: up to `half_open_probes` calls are let through
half_open --(all probes succeed)--> closed;  --(any probe fails)--> open
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from rushhour.reference_server.config import BreakerConfig

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class CircuitBreaker:
    def __init__(
        self,
        config: BreakerConfig,
        *,
        on_change: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._clock = clock
        self._on_change = on_change
        self._calls: deque[tuple[bool, bool]] = deque(maxlen=config.window)
        self._state = CLOSED
        self._opened_at = 0.0
        self._half_open_at = 0.0
        self._probes_started = 0
        self._probes_ok = 0

    @property
    def state(self) -> str:
        now = self._clock()
        if self._state == OPEN and now - self._opened_at >= self.config.open_s:
            self._move(HALF_OPEN)
        elif self._state == HALF_OPEN and now - self._half_open_at >= self.config.open_s + self.config.slow_call_ms / 1000.0:
            self._move(HALF_OPEN)  # probes that never reported back do not hold the breaker forever
        return self._state

    def available(self) -> bool:
        """Could a call go through now? (Does not reserve a probe.)"""
        state = self.state
        return state == CLOSED or (state == HALF_OPEN and self._probes_started < self.config.half_open_probes)

    def acquire(self) -> bool:
        """Reserve the right to call; in half-open this takes one of the probe slots."""
        if not self.available():
            return False
        if self._state == HALF_OPEN:
            self._probes_started += 1
        return True

    def record(self, *, ok: bool, duration_s: float, slow: bool = False) -> None:
        """`slow=True` marks a call as slow whatever its duration (one cut off by its deadline)."""
        slow = slow or duration_s * 1000.0 >= self.config.slow_call_ms
        if self._state == HALF_OPEN and self._probes_ok >= self._probes_started:
            return  # a call from before the breaker opened, not one of its probes
        if self._state == HALF_OPEN:
            self._record_probe(ok and not slow)
            return
        if self._state == OPEN:
            return  # a call started before the breaker opened
        self._calls.append((ok, slow))
        if self._tripped():
            self._move(OPEN)

    def reset(self) -> None:
        self._calls.clear()
        if self._state != CLOSED:
            self._move(CLOSED)

    def _record_probe(self, good: bool) -> None:
        if not good:
            self._move(OPEN)
            return
        self._probes_ok += 1
        if self._probes_ok >= self.config.half_open_probes:
            self._calls.clear()
            self._move(CLOSED)

    def _tripped(self) -> bool:
        n = len(self._calls)
        if n < self.config.min_calls:
            return False
        failures = sum(1 for ok, _ in self._calls if not ok)
        slow = sum(1 for _, s in self._calls if s)
        return failures / n >= self.config.failure_rate or slow / n >= self.config.slow_call_rate

    def _move(self, state: str) -> None:
        self._state = state
        if state == OPEN:
            self._opened_at = self._clock()
        if state == HALF_OPEN:
            self._half_open_at = self._clock()
            self._probes_started = 0
            self._probes_ok = 0
        if self._on_change is not None:
            self._on_change(state)
