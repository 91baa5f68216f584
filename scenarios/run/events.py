"""`events.jsonl`: the run's timeline, one JSON object per line, flushed as it happens.

Written line by line (not at the end) so a run that is killed still leaves its timeline behind,
and so other writers in the same process (the chaos timeline) can add marks through `emit`. Each
line is checked against its event's model (`rushhour.kernel.events`) before it is written: an
event of an unknown type or with a malformed field raises `EventError` instead of reaching the file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rushhour.kernel.events import parse_event


def iso_utc(epoch_s: float) -> str:
    """An epoch time as ISO 8601 UTC with milliseconds."""
    stamp = datetime.fromtimestamp(epoch_s, tz=UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class EventLog:
    """Appends typed events with `t_s` measured from the run's origin (the load start)."""

    def __init__(self, path: Path, *, origin: float | None = None) -> None:
        self.path = path
        self.origin = origin if origin is not None else time.time()
        self._lock = threading.Lock()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
        self._file: IO[str] = os.fdopen(fd, "a", encoding="utf-8")  # never appended through a planted link

    def emit(self, kind: str, **fields: Any) -> dict[str, object]:
        """Write one event now (or at run time `t_s`, a field like any other) and return it;
        `rushhour.kernel.events.EventError` when its model refuses it."""
        t_s: float | None = fields.pop("t_s", None)
        now = time.time()
        when = now - self.origin if t_s is None else t_s
        event: dict[str, object] = {"type": kind, "t_s": round(when, 6), "wall": iso_utc(now), **fields}
        line = json.dumps(event, default=str)
        parse_event(json.loads(line))  # checked as a reader will see it
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
        return event

    def close(self) -> None:
        with self._lock:
            self._file.close()
