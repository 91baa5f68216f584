"""The request mix section of a model file: kinds, sizes, priorities, modes, repetition."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from rushhour.traffic_models.fields import Fraction, NonNegative, Positive, Strict
from rushhour.traffic_models.limits import MAX_REQUEST_CHARS

Name = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]*$")]
FRACTION_TOLERANCE = 0.01


class LengthSpec(Strict):
    """A lognormal length in characters with this median and sigma, clipped to [min, max]."""

    distribution: Literal["lognormal"] = "lognormal"
    median: Positive
    sigma: NonNegative = 0.5
    min: Annotated[int, Field(ge=1, le=MAX_REQUEST_CHARS)] = 1
    max: Annotated[int, Field(ge=1, le=MAX_REQUEST_CHARS)] = 100_000

    @model_validator(mode="after")
    def _ordered(self) -> LengthSpec:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        return self


class KindSpec(Strict):
    """One kind of request. Only text input exists today; image and speech pipelines will add inputs.

    `max_tokens` is the output length asked of a generative target (openai-chat); without it the
    schedule leaves the choice to the protocol (0 in the `max_tokens` column).
    """

    fraction: Fraction
    input: Literal["text"] = "text"
    chars: LengthSpec
    deadline_factor: Positive = 1.0  # long documents get longer deadlines than a chat line
    max_tokens: LengthSpec | None = None


class PrioritySpec(Strict):
    """A priority class: its share of requests, its deadline and how many tenants send it."""

    fraction: Fraction
    deadline_ms: Annotated[int, Field(gt=0)]
    tenants: Annotated[int, Field(ge=1)] = 1


class RepetitionSpec(Strict):
    """A Zipf catalog of texts per kind, so caches see realistic hit rates."""

    catalog_size: Annotated[int, Field(ge=1)] = 100_000
    exponent: NonNegative = 1.1
    seed: int = 0


def _default_kinds() -> dict[str, KindSpec]:
    return {
        "short": KindSpec(fraction=0.85, chars=LengthSpec(median=90, sigma=0.7, min=5, max=800)),
        "document": KindSpec(
            fraction=0.15, chars=LengthSpec(median=2500, sigma=0.6, min=800, max=20_000)
        ),
    }


def _default_priorities() -> dict[str, PrioritySpec]:
    return {
        "paid": PrioritySpec(fraction=0.3, deadline_ms=2000, tenants=4),
        "free": PrioritySpec(fraction=0.6, deadline_ms=5000, tenants=16),
        "batch": PrioritySpec(fraction=0.1, deadline_ms=60_000, tenants=2),
    }


def _default_modes() -> dict[Literal["auto", "fast", "quality"], float]:
    return {"auto": 0.6, "fast": 0.3, "quality": 0.1}


class MixSpec(Strict):
    """What requests look like; every fraction table must sum to 1."""

    kinds: dict[Name, KindSpec] = Field(default_factory=_default_kinds, min_length=1)
    priorities: dict[Name, PrioritySpec] = Field(default_factory=_default_priorities, min_length=1)
    modes: dict[Literal["auto", "fast", "quality"], Fraction] = Field(
        default_factory=_default_modes, min_length=1
    )
    repetition: RepetitionSpec | None = Field(default_factory=RepetitionSpec)

    @field_validator("kinds", "priorities")
    @classmethod
    def _specs_sum_to_one(cls, value: dict[str, KindSpec] | dict[str, PrioritySpec]) -> dict:
        _check_sum({name: spec.fraction for name, spec in value.items()})
        return value

    @field_validator("modes")
    @classmethod
    def _modes_sum_to_one(cls, value: dict[str, float]) -> dict[str, float]:
        _check_sum(value)
        return value


def _check_sum(fractions: dict[str, float]) -> None:
    total = math.fsum(fractions.values())
    if abs(total - 1.0) > FRACTION_TOLERANCE:
        raise ValueError(f"fractions must sum to 1 (they sum to {total:g})")
