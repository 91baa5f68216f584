"""Shared pydantic field types for model files: clock values, positive numbers, strict models."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from rushhour.kernel.clock import parse_clock

Clock = Annotated[float, BeforeValidator(parse_clock)]
"""A clock time or a duration in seconds, written "19:30", "30m", "90s" or as a number."""

PositiveClock = Annotated[float, BeforeValidator(parse_clock), Field(gt=0)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Strict(BaseModel):
    """Base for every section of a model file: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")
