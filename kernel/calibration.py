"""The calibration record: what a relative peak (`0.7x capacity`) resolved to, in one model.

The calibration step (`rushhour.scenarios.capacity.calibrate`) makes it, the resolved scenario keeps
it as `traffic.calibration`, the `calibration` event repeats it, and summary.json shows it again
with the report's line (`rushhour.reports.summary.scenario_section.CalibrationFacts`): each takes its
fields from `CalibrationFields` here, so the record has one definition.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Calibration", "CalibrationFields"]

_CHECK = "what the check step at the cached rate showed"


class CalibrationFields(BaseModel):
    """The fields of a calibration record, with their types and meanings; `note`, `key` and `check`
    may be absent (a scenario written by hand), the harness's own record always has them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    factor: float = Field(gt=0)
    condition: Literal["none", "n-1"]
    capacity_rps: float = Field(gt=0)
    peak_rps: float = Field(gt=0)
    note: str | None = None
    key: str | None = None
    measured_at: str | None = Field(default=None, description="when the capacity was measured (UTC, ISO 8601)")
    load_then: float | None = Field(default=None, description="the machine's 1-minute load average then")
    load_now: float | None = Field(default=None, description="the machine's 1-minute load average at this run")
    check: str | None = Field(default=None, description=_CHECK)
    confirmed: bool | None = Field(default=None, description=(
        "whether a second window at or above the figure confirmed it (a cached figure was); None where nothing "
        "was measured (a dry run's placeholder)"))
    machine_drift: str | None = Field(default=None, description=(
        "what the search's anchor saw when the machine changed during the measurement, in words; None when "
        "it held or nothing was measured"))


class Calibration(CalibrationFields):
    """What a relative peak was resolved against, kept in the resolved scenario for the report."""

    note: str = ""
    key: str = ""
    check: str = Field(default="", description=_CHECK)

    @property
    def text(self) -> str:
        label = "n-1 capacity" if self.condition == "n-1" else "capacity"
        return (f"peak {self.factor:g}x {label} = {self.peak_rps:g} req/s of {self.capacity_rps:g} "
                f"({self.note})")
