"""The stretch of the model clock a run covers, and how it maps to compressed seconds."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from traffic_models.errors import TrafficModelError
from traffic_models.model import TrafficModel

OPEN_ENDED_DEFAULT_S = 60.0


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
    model: TrafficModel, *, time_scale: float, start_clock_s: float, duration_s: float | None
) -> Window:
    """Validate the run's arguments; by default cover the rest of the model's day."""
    _positive("time_scale", time_scale)
    if not math.isfinite(start_clock_s) or start_clock_s < 0:
        raise TrafficModelError(f"start_clock_s must be a non-negative number of seconds, got {start_clock_s!r}.")
    if model.duration is not None and start_clock_s >= model.duration:
        raise TrafficModelError(
            f"start_clock_s ({start_clock_s:g}) must be before the end of model "
            f'"{model.name}" at {model.duration:g} s.'
        )
    if duration_s is None:
        duration_s = (
            OPEN_ENDED_DEFAULT_S
            if model.duration is None
            else (model.duration - start_clock_s) / time_scale
        )
    _positive("duration_s", duration_s)
    return Window(start_clock_s=float(start_clock_s), duration_s=float(duration_s), time_scale=float(time_scale))


def check_rate_scale(rate_scale: float) -> None:
    """A rate scale of 0 is allowed (an empty schedule); negative or infinite is not."""
    if not math.isfinite(rate_scale) or rate_scale < 0:
        raise TrafficModelError(f"rate_scale must be a finite number >= 0, got {rate_scale!r}.")


def _positive(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise TrafficModelError(f"{name} must be a finite number > 0, got {value!r}.")
