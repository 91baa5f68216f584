"""Clock times and durations written by people ("19:30", "90s", "2h") as seconds."""

from __future__ import annotations

import math
import re

_CLOCK = re.compile(r"^(\d{1,3}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$")
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_clock(value: str | float) -> float:
    """Seconds for a clock time or a duration: "20:10" -> 72600.0, "5m" -> 300.0, 12 -> 12.0.

    Models mix times of day and lengths of time, so one parser serves both and the
    YAML stays readable for whoever edits a promotion at short notice.
    """
    if isinstance(value, bool):
        raise ValueError(f'"{value}" is not a clock time or duration.')
    if isinstance(value, (int, float)):
        return _checked(float(value), value)
    if not isinstance(value, str):
        raise ValueError(f'"{value}" is not a clock time or duration.')
    text = value.strip().lower()
    clock = _CLOCK.match(text)
    if clock:
        hours, minutes, seconds = clock.groups()
        if int(minutes) >= 60 or float(seconds or 0) >= 60:
            raise ValueError(f'"{value}" is not a valid clock time (minutes and seconds must be < 60).')
        return int(hours) * 3600.0 + int(minutes) * 60.0 + float(seconds or 0)
    duration = _DURATION.match(text)
    if duration:
        number, unit = duration.groups()
        return _checked(float(number) * _UNIT_S[unit], value)
    raise ValueError(
        f'"{value}" is not a clock time or duration; write "HH:MM", "HH:MM:SS", '
        'a number of seconds, or a number with ms/s/m/h/d such as "90s" or "2h".'
    )


def format_clock(seconds: float) -> str:
    """"HH:MM" (or "HH:MM:SS" when there are seconds) for summaries and plot labels."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}" + (f":{secs:02d}" if secs else "")


def _checked(seconds: float, original: object) -> float:
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f'"{original}" must be a finite, non-negative number of seconds.')
    return seconds
