"""What a target says about itself (`GET /v1/events`), made safe to write beside the harness's events.

A target is not trusted: its events go into `events.jsonl` under their own type, `target_event`,
with `source: "target"` and its kind as `target_kind`, so nothing it sends can pose as one of the harness's own marks (`abort`,
`fault_start`, `phase`, `run_end`) that the report reads. Its kind is kept only when it is one the
reference server emits (`TARGET_KINDS`); any other is written as `other` with the claimed name
beside it. Its fields go under `data`, scalars only, with bounded keys and texts. An entry that is
not an object, or whose `seq` is not a whole number, is malformed: the scraper counts it and
moves on.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

TARGET_EVENT = "target_event"
TARGET_SOURCE = "target"
TARGET_KINDS = frozenset({
    "breaker", "fault_injected", "node_added", "node_down", "node_killed", "node_ready",
    "node_refused", "node_removed", "node_restarted", "scale",
})
"""The kinds of target event a report may name: those the reference server's gateway records."""
OTHER_KIND = "other"
RESERVED_KEYS = frozenset({"type", "source", "seq", "wall", "t_s", "kind", "data"})
"""Keys of a target's event that are read here, never copied into its `data`."""
MAX_FIELDS = 32
MAX_KEY_CHARS = 64
MAX_TEXT_CHARS = 200
MAX_CLOCK_SKEW_S = 3600.0
"""A target's wall time further than this from the harness's is not used to place its event."""
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


class MalformedTargetEvent(ValueError):
    """One entry of a target's event list that cannot be read as an event."""


@dataclass(frozen=True)
class TargetEvent:
    """One target event as the drill writes it."""

    seq: int
    kind: str
    wall: float | None
    fields: dict[str, Any]


def _seq(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedTargetEvent(f'An event\'s "seq" must be a whole number of at least 0, not {_clip(repr(value))}.')
    return value


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "…"


def _scalar(value: object) -> object:
    """A field's value as written: numbers and booleans as they are (non-finite ones as text),
    texts clipped, anything else as its clipped repr."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return _clip(value if isinstance(value, str) else repr(value))


def _wall(value: object, now: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    wall = float(value)
    return wall if math.isfinite(wall) and abs(wall - now) <= MAX_CLOCK_SKEW_S else None


def read_target_event(entry: object, *, now: float) -> TargetEvent:
    """One entry of a target's `events` list; MalformedTargetEvent when it is not an object or
    its `seq` is not a whole number."""
    if not isinstance(entry, dict):
        raise MalformedTargetEvent(f"An event must be a JSON object, not {type(entry).__name__} ({_clip(repr(entry))}).")
    seq = _seq(entry.get("seq", 0))
    claimed = entry.get("type")
    kind = claimed if isinstance(claimed, str) and claimed in TARGET_KINDS else OTHER_KIND
    fields: dict[str, Any] = {}
    for key, value in entry.items():
        if len(fields) >= MAX_FIELDS:
            break
        if isinstance(key, str) and key not in RESERVED_KEYS and len(key) <= MAX_KEY_CHARS and _KEY.fullmatch(key):
            fields[key] = _scalar(value)
    if "kind" in entry:
        fields["fault_kind"] = _scalar(entry["kind"])
    if kind == OTHER_KIND:
        fields["claimed_type"] = _scalar(claimed)
    return TargetEvent(seq=seq, kind=kind, wall=_wall(entry.get("wall"), now), fields=fields)


def target_event_record(event: TargetEvent, *, t0: float, now: float) -> dict[str, Any]:
    """The fields `EventLog.emit(TARGET_EVENT, ...)` writes for one target event: its run time
    (the target's clock when it is close to the harness's, else the moment it was read)."""
    when = event.wall if event.wall is not None else now
    return {"t_s": when - t0, "source": TARGET_SOURCE, "target_kind": event.kind, "target_seq": event.seq,
            "data": event.fields}
