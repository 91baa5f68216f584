"""Small parsers for the human units a scenario file uses ("180s", "3m", "20:10")."""

from __future__ import annotations

import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_FACTORS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_CLOCK = re.compile(r"^\s*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*$")


def parse_duration(value: str | float | int) -> float:
    """Seconds from "180s", "3m", "1.5h", "250ms" or a bare number (seconds)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value))
    if match is None:
        raise ValueError(f'"{value}" is not a duration; write e.g. "180s", "3m" or "1h".')
    return float(match.group(1)) * _FACTORS[match.group(2) or "s"]


def parse_clock_s(value: str) -> float:
    """Seconds after midnight from "HH:MM" or "HH:MM:SS" (24 h clock)."""
    match = _CLOCK.match(str(value))
    if match is None:
        raise ValueError(f'"{value}" is not a clock time; write "HH:MM" (24 h), e.g. "20:10".')
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    if hours > 24 or minutes > 59 or seconds > 59:
        raise ValueError(f'"{value}" is not a clock time between 00:00 and 24:00.')
    return float(hours * 3600 + minutes * 60 + seconds)


def format_clock(seconds: float) -> str:
    """"HH:MM:SS" for a number of seconds after midnight (wrapping past 24 h)."""
    total = int(round(seconds))
    total = total if total == 86400 else total % 86400
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"
