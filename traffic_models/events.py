"""Events laid on top of the base curve: promotions, flash crowds and steps.

Each event multiplies the base rate by a factor of the model clock, and says which
stretches of the day are its ramp, its peak and its recovery (for the run's phases).
Factors of overlapping events multiply.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from rushhour.kernel.clock import format_clock
from rushhour.traffic_models.fields import Clock, Positive, PositiveClock, Strict

Span = tuple[str, float, float]
"""(phase label, start clock s, end clock s) on the model clock."""


class Promotion(Strict):
    """Linear ramp from 1x to `multiplier`, a hold, and a linear ramp back down."""

    type: Literal["promotion"]
    name: str = "promotion"
    start: Clock
    ramp: Clock = 1800.0
    hold: PositiveClock
    ramp_down: Clock | None = None
    multiplier: Positive
    recovery: Clock = 1800.0

    @property
    def _down(self) -> float:
        return self.ramp if self.ramp_down is None else self.ramp_down

    def factor(self, clock: np.ndarray) -> np.ndarray:
        peak_start = self.start + self.ramp
        peak_end = peak_start + self.hold
        times = [self.start, peak_start, peak_end, peak_end + self._down]
        return np.interp(clock, times, [1.0, self.multiplier, self.multiplier, 1.0])

    def spans(self) -> list[Span]:
        peak_start = self.start + self.ramp
        peak_end = peak_start + self.hold
        return [
            ("ramp", self.start, peak_start),
            ("peak", peak_start, peak_end),
            ("recovery", peak_end, peak_end + self._down + self.recovery),
        ]

    def marks(self) -> list[Span]:
        return [(self.name, self.start, self.start + self.ramp + self.hold + self._down)]


class FlashCrowd(Strict):
    """An instant spike to `peak` times the base at `at`, decaying back with `half_life`."""

    type: Literal["flash_crowd"]
    name: str = "flash crowd"
    at: Clock
    peak: Positive
    half_life: PositiveClock
    recovery: Clock | None = None

    def factor(self, clock: np.ndarray) -> np.ndarray:
        elapsed = clock - self.at
        decay = np.exp(-math.log(2.0) * np.clip(elapsed, 0.0, None) / self.half_life)
        return np.where(elapsed >= 0, 1.0 + (self.peak - 1.0) * decay, 1.0)

    def spans(self) -> list[Span]:
        peak_end = self.at + 2.0 * self.half_life
        recovery = 4.0 * self.half_life if self.recovery is None else self.recovery
        return [("peak", self.at, peak_end), ("recovery", peak_end, peak_end + recovery)]

    def marks(self) -> list[Span]:
        return [(self.name, self.at, self.at + 2.0 * self.half_life)]


class Step(Strict):
    """The rate jumps to `multiplier` times the base at `at` (and back at `until`, if given)."""

    type: Literal["step"]
    name: str = "step"
    at: Clock
    multiplier: Positive
    until: Clock | None = None
    recovery: Clock = 900.0

    @model_validator(mode="after")
    def _ends_after_it_starts(self) -> Step:
        if self.until is not None and self.until <= self.at:
            raise ValueError(f"until ({format_clock(self.until)}) must be after at ({format_clock(self.at)})")
        return self

    def factor(self, clock: np.ndarray) -> np.ndarray:
        end = math.inf if self.until is None else self.until
        inside = (clock >= self.at) & (clock < end)
        return np.where(inside, self.multiplier, 1.0)

    def spans(self) -> list[Span]:
        if self.multiplier <= 1.0:
            return []
        end = math.inf if self.until is None else self.until
        return [("peak", self.at, end), ("recovery", end, end + self.recovery)]

    def marks(self) -> list[Span]:
        return [(self.name, self.at, self.at if self.until is None else self.until)]


Event = Annotated[Promotion | FlashCrowd | Step, Field(discriminator="type")]
EVENT_TYPES = ("promotion", "flash_crowd", "step")


def events_factor(events: list[Promotion | FlashCrowd | Step], clock: np.ndarray) -> np.ndarray:
    """The product of every event's multiplier at each clock time."""
    factor = np.ones_like(clock, dtype=np.float64)
    for event in events:
        factor *= event.factor(clock)
    return factor
