"""Each events.jsonl event is checked by its model: known types read, unknown or malformed refused by name."""

from __future__ import annotations

from typing import get_args

import pytest

from rushhour.kernel.events import EVENT_MODELS, EVENT_TYPES, EventError, FaultStart, Phase, RunEnd, parse_event


def test_parse_event_reads_a_phase_into_its_model() -> None:
    event = parse_event({"type": "phase", "t_s": 5, "name": "peak", "start_s": 5, "end_s": 10.5})
    assert isinstance(event, Phase) and (event.name, event.start_s, event.end_s) == ("peak", 5.0, 10.5)


def test_parse_event_keeps_fields_its_model_does_not_declare() -> None:
    event = parse_event({"type": "scraper", "t_s": 3.0, "samples": 12, "errors": 1})
    assert event.model_extra == {"samples": 12, "errors": 1}


def test_parse_event_refuses_an_unknown_type_naming_it() -> None:
    with pytest.raises(EventError, match="The event type 'fault_begin' is none of the types"):
        parse_event({"type": "fault_begin", "t_s": 1.0})


def test_parse_event_refuses_a_line_without_a_type() -> None:
    with pytest.raises(EventError, match='no "type" field'):
        parse_event({"t_s": 1.0, "name": "x"})


def test_parse_event_refuses_a_field_of_the_wrong_type_naming_the_field() -> None:
    with pytest.raises(EventError, match=r'The "run_end" event is malformed: duration_s: Input should be a valid number'):
        parse_event({"type": "run_end", "duration_s": "ten seconds"})


def test_parse_event_refuses_a_fault_start_without_its_time() -> None:
    with pytest.raises(EventError, match=r'"fault_start" event is malformed: t_s: Field required'):
        parse_event({"type": "fault_start", "name": "kill"})


def test_parse_event_refuses_what_is_not_an_object() -> None:
    with pytest.raises(EventError, match="must be a JSON object, not list"):
        parse_event(["run_end"])


def test_every_model_names_its_types_and_the_types_are_distinct() -> None:
    kinds = [kind for model in EVENT_MODELS for kind in get_args(model.model_fields["type"].annotation)]
    assert len(kinds) == len(set(kinds)) == len(EVENT_TYPES)
    assert {"run_start", "phase", "fault_start", "fault_end", "generator", "abort", "run_end", "ab",
            "target_event", "leak_audit"} <= EVENT_TYPES


def test_run_end_defaults_say_a_whole_run() -> None:
    event = parse_event({"type": "run_end", "t_s": 9.0, "duration_s": 9.0})
    assert isinstance(event, RunEnd) and event.interrupted is False and event.rebuilt is False
    assert isinstance(parse_event({"type": "fault_start", "t_s": 2, "name": "kill"}), FaultStart)


def test_a_calibration_event_is_checked_as_the_calibration_record() -> None:
    record = {"factor": 0.7, "condition": "none", "capacity_rps": 40.0, "peak_rps": 28.0}
    assert parse_event({"type": "calibration", "t_s": 0.0, "source": "harness", **record}).model_extra == record
    with pytest.raises(EventError, match=r'"calibration" event is malformed: .*capacity_rps'):
        parse_event({"type": "calibration", "t_s": 0.0, **record, "capacity_rps": "forty"})


def test_run_start_takes_the_fault_lease_or_why_it_could_not_be_read() -> None:
    assert parse_event({"type": "run_start", "t_s": 0.0, "fault_lease_s": 90.0}).model_dump()["fault_lease_s"] == 90.0
    said = 'RUSHHOUR_LEASE_S="soon" is not a number of seconds above zero.'
    assert parse_event({"type": "run_start", "t_s": 0.0, "fault_lease_s": said}).model_dump()["fault_lease_s"] == said
