"""Scenario clock times ("20:10", "20:10:30") as seconds since midnight of the modelled day."""

from __future__ import annotations

import re

__all__ = ["format_clock", "parse_clock"]

_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?")


def parse_clock(value: str | float | int) -> float:
    """Seconds on the model clock: numbers are taken as seconds, strings as HH:MM[:SS]."""
    if isinstance(value, bool):
        raise ValueError(f"Clock time {value!r} is neither seconds nor HH:MM[:SS].")
    if isinstance(value, (int, float)):
        return float(value)
    match = _CLOCK.fullmatch(value.strip())
    if match is None:
        raise ValueError(f'Clock time "{value}" is neither seconds nor HH:MM[:SS].')
    hours, minutes = int(match.group(1)), int(match.group(2))
    seconds = float(match.group(3) or 0.0)
    if hours > 24 or minutes > 59 or seconds >= 60:
        raise ValueError(f'Clock time "{value}" is not a time of day.')
    return hours * 3600.0 + minutes * 60.0 + seconds


def format_clock(seconds: float) -> str:
    """HH:MM:SS, the way the scenario clock reads (hours run past 24 on multi-day models)."""
    whole = int(round(seconds))
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
