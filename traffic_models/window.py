"""The stretch of the model clock a run covers, and how it maps to compressed seconds."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rushhour.kernel.clock import format_clock
from rushhour.traffic_models.errors import TrafficModelError
from rushhour.traffic_models.limits import check_duration
from rushhour.traffic_models.model import TrafficModel

OPEN_ENDED_DEFAULT_S = 60.0


@dataclass(frozen=True)
class WindowNames:
    """What the run's arguments are called where a person wrote them, for error messages."""

    time_scale: str = "time_scale"
    start_clock: str = "start_clock"
    duration: str = "duration"
    rate_scale: str = "rate_scale"


API_NAMES = WindowNames()
"""The fields of a scenario's traffic section (and, less their `_s`, the keyword arguments)."""

FLAG_NAMES = WindowNames(time_scale="--time-scale", start_clock="--start", duration="--duration",
                         rate_scale="--rate-scale")
"""The flags of `rushhour traffic`."""


@dataclass(frozen=True)
class Window:
    """Model clock [start_clock_s, end_clock_s) shown in `duration_s` compressed seconds."""

    start_clock_s: float
    duration_s: float
    time_scale: float

    @property
    def end_clock_s(self) -> float:
        return self.start_clock_s + self.duration_s * self.time_scale

    def to_offset(self, clock: np.ndarray | float) -> np.ndarray | float:
        """Compressed seconds from the start of the run for a model clock time."""
        return (clock - self.start_clock_s) / self.time_scale

    def to_clock(self, offset: np.ndarray | float) -> np.ndarray | float:
        """Model clock time for compressed seconds from the start of the run."""
        return self.start_clock_s + offset * self.time_scale


def resolve_window(
    model: TrafficModel, *, time_scale: float, start_clock_s: float, duration_s: float | None,
    names: WindowNames = API_NAMES,
) -> Window:
    """Validate the run's arguments; by default cover the rest of the model's day."""
    _positive(names.time_scale, time_scale)
    if not math.isfinite(start_clock_s) or start_clock_s < 0:
        raise TrafficModelError(
            f"{names.start_clock} must be a non-negative number of seconds, got {start_clock_s!r}.")
    if model.duration is not None and start_clock_s >= model.duration:
        raise TrafficModelError(
            f'{names.start_clock} must be before the end of model "{model.name}" at '
            f"{format_clock(model.duration)} ({model.duration:g} s), got {format_clock(start_clock_s)} "
            f"({start_clock_s:g} s)."
        )
    if duration_s is None:
        duration_s = (
            OPEN_ENDED_DEFAULT_S
            if model.duration is None
            else (model.duration - start_clock_s) / time_scale
        )
    _positive(names.duration, duration_s)
    return Window(start_clock_s=float(start_clock_s), duration_s=float(duration_s), time_scale=float(time_scale))


def check_drawable(window: Window, names: WindowNames = API_NAMES) -> None:
    """Refuse a window too long to draw a schedule over (a curve or the phases of it are fine)."""
    check_duration(names.start_clock, window.start_clock_s)
    check_duration(names.duration, window.duration_s)


def check_rate_scale(rate_scale: float, *, name: str = API_NAMES.rate_scale, allow_zero: bool = True) -> None:
    """A rate scale of 0 gives an empty schedule, allowed unless `allow_zero` is False (a person's
    flag or file, where 0 is a mistake); negative or infinite is never allowed."""
    if allow_zero and rate_scale == 0:
        return
    _positive(name, rate_scale)


def _positive(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise TrafficModelError(f"{name} must be a finite number > 0, got {value!r}.")
