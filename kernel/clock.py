"""Clock times and durations written by people ("19:30", "90s", "2h") as seconds, and back.

The one parser and formatter of human time in rushhour: traffic models, scenario files, the dry
run, `events.jsonl` and `rushhour traffic` all read and print time through this module.

    parse_clock("20:10")    -> 72600.0   a time of day or a duration (models mix both)
    parse_clock_s("20:10")  -> 72600.0   a time of day only
    parse_duration("3m")    -> 180.0     a length of time only
    format_clock(72605)     -> "20:10:05"
"""

from __future__ import annotations

import math
import re

__all__ = ["format_clock", "parse_clock", "parse_clock_s", "parse_duration", "refuse_unquoted_clock"]

_CLOCK = re.compile(r"^(\d{1,3}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$")
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_clock(value: str | float) -> float:
    """Seconds for a clock time or a duration: "20:10" -> 72600.0, "5m" -> 300.0, 12 -> 12.0.

    Models mix times of day and lengths of time, so one parser serves both and the
    YAML stays readable for whoever edits a promotion at short notice.
    """
    text = _text(value)
    if text is None:
        return _seconds(value)
    clock = _clock(text, value)
    if clock is not None:
        return clock
    duration = _duration(text, value)
    if duration is not None:
        return duration
    raise ValueError(
        f'"{value}" is not a clock time or duration; write "HH:MM", "HH:MM:SS", '
        'a number of seconds, or a number with ms/s/m/h/d such as "90s" or "2h".'
    )


def parse_clock_s(value: str | float) -> float:
    """Seconds after midnight from "HH:MM" or "HH:MM:SS" (a bare number is taken as seconds)."""
    text = _text(value)
    if text is None:
        return _seconds(value)
    clock = _clock(text, value)
    if clock is None:
        raise ValueError(f'"{value}" is not a clock time; write "HH:MM" (24 h), e.g. "20:10".')
    return clock


def parse_duration(value: str | float) -> float:
    """Seconds from "180s", "3m", "1.5h", "250ms", "1d" or a bare number (seconds)."""
    text = _text(value)
    if text is None:
        return _seconds(value)
    duration = _duration(text, value)
    if duration is None:
        raise ValueError(f'"{value}" is not a duration; write e.g. "180s", "3m" or "1h".')
    return duration


def refuse_unquoted_clock(value: object) -> object:
    """`value` unchanged unless it is a number where a time of day belongs: YAML 1.1 reads an
    unquoted 19:00 as the base-60 integer 1140 (and 19:00:30 as 68430), so say so, and how to
    write it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, int) and 0 <= value < 24 * 60:
        hours, minutes = divmod(value, 60)
        unquoted, quoted = f"{hours}:{minutes:02d}", f"{hours:02d}:{minutes:02d}"
    elif isinstance(value, int) and 3600 <= value < 24 * 3600:
        hours, minutes, seconds = value // 3600, value // 60 % 60, value % 60
        unquoted, quoted = f"{hours}:{minutes:02d}:{seconds:02d}", f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    else:
        raise ValueError(f'{value} is a number, not a time of day; write the time in quotes, e.g. "19:00".')
    raise ValueError(f'{value} is what YAML makes of an unquoted {unquoted}; write it in quotes: "{quoted}".')


def format_clock(seconds: float) -> str:
    """"HH:MM:SS" on the model clock; hours run past 24 on models longer than a day."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"


def _text(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f'"{value}" is not a clock time or duration.')
    return value.strip().lower() if isinstance(value, str) else None


def _seconds(value: object) -> float:
    seconds = float(value)  # type: ignore[arg-type]
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f'"{value}" must be a finite, non-negative number of seconds.')
    return seconds


def _clock(text: str, original: object) -> float | None:
    match = _CLOCK.match(text)
    if match is None:
        return None
    hours, minutes, seconds = match.groups()
    if int(minutes) >= 60 or float(seconds or 0) >= 60:
        raise ValueError(f'"{original}" is not a valid clock time (minutes and seconds must be < 60).')
    return int(hours) * 3600.0 + int(minutes) * 60.0 + float(seconds or 0)


def _duration(text: str, original: object) -> float | None:
    match = _DURATION.match(text)
    if match is None:
        return None
    number, unit = match.groups()
    return _seconds(float(number) * _UNIT_S[unit]) if math.isfinite(float(number)) else _seconds(original)
