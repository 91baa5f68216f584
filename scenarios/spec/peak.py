"""A drill's peak stated relative to the measured capacity: `peak_rps: 0.7x capacity`.

`0.7x capacity` is 70% of the highest rate at which the scenario's SLOs hold on this machine
(`rushhour capacity`, cached per machine, server configuration and version); `0.5x n-1
capacity` is relative to the capacity with one quality node down. `rushhour.scenarios.spec.plan`
turns it into a rate before anything else (see `rushhour.scenarios.capacity.calibrate`), and the
resolved scenario keeps the figure it used as `traffic.calibration`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Calibration", "RelativePeak", "parse_relative_peak"]

_PATTERN = re.compile(r"^\s*(?P<factor>\d+(?:\.\d+)?|\.\d+)\s*x\s+(?P<n1>n-1\s+)?capacity\s*$", re.IGNORECASE)
MAX_FACTOR = 10.0


@dataclass(frozen=True)
class RelativePeak:
    """`factor` times the capacity measured under `condition` ("none" or "n-1")."""

    factor: float
    condition: Literal["none", "n-1"]

    @property
    def text(self) -> str:
        return f"{self.factor:g}x {'n-1 ' if self.condition == 'n-1' else ''}capacity"


def parse_relative_peak(text: str) -> RelativePeak:
    """ "0.7x capacity" -> RelativePeak(0.7, "none"); ValueError (a sentence) for anything else."""
    match = _PATTERN.match(text)
    if match is None:
        raise ValueError(f'"{text}" is neither a rate nor relative to capacity; write e.g. 130, '
                         '"0.7x capacity" or "0.5x n-1 capacity"')
    factor = float(match["factor"])
    if not 0 < factor <= MAX_FACTOR:
        raise ValueError(f'the factor in "{text}" must be above 0 and at most {MAX_FACTOR:g}')
    return RelativePeak(factor, "n-1" if match["n1"] else "none")


class Calibration(BaseModel):
    """What a relative peak was resolved against, kept in the resolved scenario for the report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    factor: float = Field(gt=0)
    condition: Literal["none", "n-1"]
    capacity_rps: float = Field(gt=0)
    peak_rps: float = Field(gt=0)
    note: str = ""
    key: str = ""
    measured_at: str | None = Field(default=None, description="when the capacity was measured (UTC, ISO 8601)")
    load_then: float | None = Field(default=None, description="the machine's 1-minute load average then")
    load_now: float | None = Field(default=None, description="the machine's 1-minute load average at this run")
    check: str = Field(default="", description="what the check step at the cached rate showed")
    confirmed: bool | None = Field(default=None, description=(
        "whether a second window at or above the figure confirmed it (a cached figure was); None where nothing "
        "was measured (a dry run's placeholder)"))

    @property
    def text(self) -> str:
        label = "n-1 capacity" if self.condition == "n-1" else "capacity"
        return (f"peak {self.factor:g}x {label} = {self.peak_rps:g} req/s of {self.capacity_rps:g} "
                f"({self.note})")
