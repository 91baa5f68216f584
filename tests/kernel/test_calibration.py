"""The calibration record is one model: the scenario's copy and summary.json's share its fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rushhour.kernel.calibration import Calibration, CalibrationFields
from rushhour.reports.summary.scenario_section import CalibrationFacts
from rushhour.scenarios.spec.peak import Calibration as ScenarioCalibration

RECORD = {"factor": 0.7, "condition": "n-1", "capacity_rps": 40.0, "peak_rps": 28.0, "note": "measured now",
          "key": "abc", "measured_at": "2026-12-04T10:00:00+00:00", "load_then": 0.5, "load_now": 0.6,
          "check": "", "confirmed": True, "machine_drift": None}
DRIFTED = RECORD | {"confirmed": False, "machine_drift": "the machine answered the same load 12% slower at the end"}


def test_the_scenario_and_the_summary_read_the_same_fields() -> None:
    assert ScenarioCalibration is Calibration
    assert list(Calibration.model_fields) == list(CalibrationFields.model_fields)
    assert list(CalibrationFacts.model_fields) == [*CalibrationFields.model_fields, "text"]


@pytest.mark.parametrize("record", [RECORD, DRIFTED], ids=["steady", "machine-changed"])
def test_a_record_the_drill_writes_is_read_by_the_summary_unchanged(record: dict[str, object]) -> None:
    calibration = Calibration.model_validate(record)
    facts = CalibrationFacts.model_validate(calibration.model_dump() | {"text": calibration.text})
    assert facts.model_dump(exclude={"text"}) == record
    assert facts.text == "peak 0.7x n-1 capacity = 28 req/s of 40 (measured now)"


def test_a_record_with_an_unknown_field_or_a_zero_capacity_is_refused() -> None:
    with pytest.raises(ValidationError, match="extra"):
        Calibration.model_validate(RECORD | {"capacity": 40.0})
    with pytest.raises(ValidationError, match="capacity_rps"):
        Calibration.model_validate(RECORD | {"capacity_rps": 0})


def test_a_hand_written_record_leaves_note_key_and_check_absent_in_the_summary() -> None:
    facts = CalibrationFacts.model_validate({"factor": 0.5, "condition": "none", "capacity_rps": 10.0,
                                             "peak_rps": 5.0, "text": "peak 0.5x capacity"})
    assert (facts.note, facts.key, facts.check) == (None, None, None)
