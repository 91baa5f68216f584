"""The run's timeline writer: every event checked by its model before its line is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.kernel.events import EventError
from rushhour.scenarios.run.events import EventLog


def test_event_log_refuses_an_unknown_type_and_writes_nothing(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", origin=0.0)
    with pytest.raises(EventError, match="'fault_begin' is none of the types"):
        log.emit("fault_begin", name="kill")
    log.close()
    assert (tmp_path / "events.jsonl").read_text() == ""


def test_event_log_refuses_a_malformed_field_naming_it(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", origin=0.0)
    with pytest.raises(EventError, match='"phase" event is malformed: start_s'):
        log.emit("phase", name="peak", start_s="soon")
    log.emit("phase", name="peak", start_s=5.0, end_s=10.0)
    log.close()
    assert (tmp_path / "events.jsonl").read_text().count("\n") == 1
