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

from rushhour.kernel.calibration import Calibration

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
