"""The typed traffic model: what a model file (or a spec string) says about a day of traffic."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Discriminator, Field, Tag, ValidationInfo, field_validator, model_validator

from rushhour.kernel.clock import format_clock
from rushhour.traffic_models.curves import DAY_S, NAMED_CURVES, curve_points, curve_values
from rushhour.traffic_models.events import Event, events_factor
from rushhour.traffic_models.fields import Clock, NonNegative, Positive, PositiveClock, Strict
from rushhour.traffic_models.mixspec import MixSpec
from rushhour.traffic_models.sessions import SessionSpec

CurvePoint = tuple[Clock, NonNegative]


def _curve_form(value: object) -> str:
    return "name" if isinstance(value, str) else "points"


Curve = Annotated[
    Annotated[str, Tag("name")] | Annotated[list[CurvePoint], Tag("points")],
    Discriminator(_curve_form),
]
"""A named curve ("diurnal") or [time of day, multiplier] points; errors name the form that was written."""


class ReplaySpec(Strict):
    """Arrivals taken from a real access log instead of the base curve and events."""

    path: Path = Field(description="the log file, relative to the model file")
    format: Literal["azure-llm", "mooncake", "burstgpt", "csv", "jsonl"] = Field(
        default="csv", description="azure-llm (Azure LLM inference traces 2023/2024), mooncake (JSON lines with "
        "hash_ids), burstgpt (BurstGPT CSV), or a plain csv / jsonl log with a timestamp column")
    chars_per_token: Positive = Field(default=4.0, description="characters sent per logged prompt token")
    jitter: Clock = Field(default=1.0, description="model seconds copies of a row move by when rate_scale duplicates it")


class TrafficModel(Strict):
    """A day of traffic: base rate x base curve x events, the request mix, or a replayed log.

    `duration` is the length of the model's clock in seconds (24 h for daily models,
    the trace's span for replays, None for open-ended constant traffic).
    """

    name: str = ""
    description: str = ""
    duration: PositiveClock | None = DAY_S
    base_rps: Positive = Field(default=1.0, description="requests per model second at curve value 1")
    curve: Curve = "flat"
    events: list[Event] = Field(default_factory=list)
    mix: MixSpec = Field(default_factory=MixSpec)
    replay: ReplaySpec | None = None
    sessions: SessionSpec | None = Field(
        default=None, description="each arrival opens a multi-turn conversation; later turns follow its answers")

    @field_validator("curve")
    @classmethod
    def _known_curve(cls, value: str | list[tuple[float, float]]) -> str | list:
        if isinstance(value, str) and value not in NAMED_CURVES:
            known = ", ".join(sorted(NAMED_CURVES))
            raise ValueError(f'"{value}" is not a named curve; use one of {known} or a list of points')
        if isinstance(value, list) and not value:
            raise ValueError("a curve needs at least one [time, value] point")
        late = [time for time, _ in value if time >= DAY_S] if isinstance(value, list) else []
        if late:
            raise ValueError(f"a point at {format_clock(late[0])} is past midnight; a curve describes one day "
                             "(00:00 up to 24:00) and repeats every day")
        return value

    @field_validator("events")
    @classmethod
    def _events_inside(cls, events: list[Event], info: ValidationInfo) -> list[Event]:
        duration = info.data.get("duration")
        for index, event in enumerate(events):
            start = event.marks()[0][1]
            if duration is not None and start >= duration:
                raise ValueError(f'item {index} ("{event.name}") starts at {format_clock(start)}, at or after the end '
                                 f"of the model (duration {format_clock(duration)}), so it would never happen")
        return events

    @model_validator(mode="after")
    def _replay_alone(self) -> TrafficModel:
        if self.replay is not None and self.events:
            raise ValueError("a replayed model takes its shape from the log; remove events or replay")
        if self.replay is not None and self.sessions is not None:
            raise ValueError("a replayed model takes its conversations from the log's session_id; remove sessions")
        return self

    def base_rate(self, clock: np.ndarray) -> np.ndarray:
        """Requests per model second of the base curve, before events."""
        times, values = curve_points(self.curve)
        return self.base_rps * curve_values(times, values, clock)

    def rate(self, clock: npt.ArrayLike) -> np.ndarray:
        """Requests per model second at each model clock time (events included)."""
        clock = np.asarray(clock, dtype=np.float64)
        return self.base_rate(clock) * events_factor(self.events, clock)
