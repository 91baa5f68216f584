"""The gateway's own events (supervisor, breaker, fault, scale), numbered for `GET /v1/events`.

Every event goes through `EventLog.record`, which gives it the next sequence number and the wall
time, so a reader that asks for the events after the last `seq` it saw never misses one and never
meets an event without a number.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping

log = logging.getLogger("rushhour.gateway")
DEFAULT_KEEP = 2000
MAX_PAGE = 2000


class EventLog:
    """The last `keep` events, oldest first."""

    def __init__(self, *, keep: int = DEFAULT_KEEP, wall: Callable[[], float] = time.time) -> None:
        self._events: deque[tuple[int, dict[str, object]]] = deque(maxlen=keep)
        self._sequence = itertools.count(1)
        self._wall = wall

    def record(self, event: Mapping[str, object]) -> dict[str, object]:
        """Number, timestamp, keep and log one event; the fields of `event` cannot override
        `seq` or `wall`."""
        seq = next(self._sequence)
        numbered: dict[str, object] = {"seq": seq, "wall": self._wall()}
        numbered.update((k, v) for k, v in event.items() if k not in numbered)
        self._events.append((seq, numbered))
        log.info("%s", json.dumps(numbered, default=str))
        return numbered

    def after(self, seq: int, limit: int = 500) -> list[dict[str, object]]:
        """The events numbered above `seq`, oldest first, at most `limit` (clamped to 1..2000)."""
        page = max(1, min(limit, MAX_PAGE))
        return list(itertools.islice((event for number, event in self._events if number > seq), page))

    def __len__(self) -> int:
        return len(self._events)
