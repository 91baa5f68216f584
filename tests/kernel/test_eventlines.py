"""events.jsonl lines read through the event models: events kept with their line, the rest set aside."""

from __future__ import annotations

import json
from pathlib import Path

from rushhour.kernel.eventlines import check_lines, read_event_file
from rushhour.kernel.events import FaultStart, RunStart

_START = json.dumps({"type": "run_start", "t_s": 0.0, "scenario": "smoke"})
_FAULT = json.dumps({"type": "fault_start", "t_s": 2.5, "name": "kill"})


def test_check_lines_keeps_each_event_typed_with_its_line_and_as_written() -> None:
    read = check_lines([_START, "", _FAULT])
    assert [(c.line, type(c.event)) for c in read.events] == [(1, RunStart), (3, FaultStart)]
    assert read.raw == [json.loads(_START), json.loads(_FAULT)] and read.refused == []


def test_check_lines_sets_aside_a_cut_line_an_unknown_type_and_a_malformed_field_by_number() -> None:
    lines = [_START, '{"type": "fault_sta', '{"type": "fault_begin", "t_s": 1}', '{"type": "fault_start", "name": "x"}',
             "[1, 2]", _FAULT]
    read = check_lines(lines)
    assert [c.line for c in read.events] == [1, 6]
    assert [(r.line, r.json) for r in read.refused] == [(2, False), (3, True), (4, True), (5, True)]
    assert "not JSON" in read.refused[0].reason and "'fault_begin'" in read.refused[1].reason
    assert "t_s: Field required" in read.refused[2].reason and "JSON object, not list" in read.refused[3].reason


def test_check_lines_refuses_a_line_nested_too_deeply_instead_of_raising() -> None:
    read = check_lines(["[" * 100_000 + "]" * 100_000, _FAULT], first_line=41)
    assert [r.line for r in read.refused] == [41] and "nested too deeply" in read.refused[0].reason
    assert [c.line for c in read.events] == [42]


def test_read_event_file_reads_a_missing_file_as_no_events_and_bad_bytes_as_one_refused_line(tmp_path: Path) -> None:
    assert read_event_file(tmp_path / "absent.jsonl").events == []
    path = tmp_path / "events.jsonl"
    path.write_bytes(_START.encode() + b"\n" + b'{"type": "\xff"}\n' + _FAULT.encode() + b"\n")
    read = read_event_file(path)
    assert [c.line for c in read.events] == [1, 3] and [r.line for r in read.refused] == [2]
