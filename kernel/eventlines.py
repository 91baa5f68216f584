"""Reading `events.jsonl` lines through the event models: the one reader of the report, the rebuild
and the live view.

Each line is parsed as JSON (depth-limited, `rushhour.kernel.jsonfile`) and checked against its
event's model (`rushhour.kernel.events.parse_event`). A line that is not JSON, or that its model
refuses, is set aside as a `RefusedLine` with its line number and the reason, never read as an
event and never raised: a reader decides what a refused line means to it (the report lists it, the
rebuild and the live view go on without it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rushhour.kernel import jsonfile
from rushhour.kernel.events import Event, EventError, parse_event

__all__ = ["CheckedEvent", "EventLines", "RefusedLine", "check_lines", "read_event_file"]


@dataclass(frozen=True)
class RefusedLine:
    """A line of events.jsonl that is not an event: its number, the reason, and whether it was JSON."""

    line: int
    reason: str
    json: bool
    """True when the line was JSON its event's model refused; False when it was not JSON at all."""


@dataclass(frozen=True)
class CheckedEvent:
    """A line its event's model accepted: its number, the object as written and the typed event."""

    line: int
    raw: dict[str, Any]
    event: Event


@dataclass
class EventLines:
    """The events a run of lines held, and the lines set aside."""

    events: list[CheckedEvent] = field(default_factory=list)
    refused: list[RefusedLine] = field(default_factory=list)

    @property
    def raw(self) -> list[dict[str, Any]]:
        """Each accepted event as written, in file order."""
        return [checked.raw for checked in self.events]


def check_lines(lines: Iterable[str], *, first_line: int = 1) -> EventLines:
    """Each non-blank line checked as an event; `first_line` numbers the first one (a tail reader
    passes the number after the lines it read before)."""
    result = EventLines()
    for number, line in enumerate(lines, start=first_line):
        if not line.strip():
            continue
        try:
            raw = jsonfile.loads(line)
        except json.JSONDecodeError as exc:
            result.refused.append(RefusedLine(number, f"it is not JSON ({exc.msg} at column {exc.colno})", json=False))
            continue
        except ValueError as exc:  # TooDeepJSONError: "it is nested too deeply ..."
            result.refused.append(RefusedLine(number, str(exc), json=False))
            continue
        try:
            event = parse_event(raw)
        except EventError as exc:
            result.refused.append(RefusedLine(number, str(exc), json=True))
            continue
        result.events.append(CheckedEvent(number, raw, event))
    return result


def read_event_file(path: Path) -> EventLines:
    """Every line of a timeline checked as an event; a missing or unreadable file holds none.
    Bytes that are not UTF-8 are replaced, so such a line is refused rather than the whole file."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return EventLines()
    return check_lines(text.split("\n"))
