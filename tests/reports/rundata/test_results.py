"""Reading a results folder: a text file that is not text is refused by name, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.reports.rundata.results import ResultsError, load_run, read_text
from tests.reports.helpers import requests_frame, write_run


def test_read_text_names_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"ok\n\xd4\x00")
    with pytest.raises(ResultsError, match=r'events.jsonl" is not UTF-8 text \(byte 0xd4 at offset 3\)'):
        read_text(path)


def test_results_binary_chaos_journal_is_listed_as_missing(tmp_path: Path) -> None:
    write_run(tmp_path, requests_frame([0.0, 1.0], [10.0, 20.0]))
    (tmp_path / "chaos").mkdir(exist_ok=True)
    (tmp_path / "chaos" / "kill.journal.json").write_bytes(b"\xff\xfe\x00")
    run = load_run(tmp_path)
    assert "chaos/kill.journal.json (not JSON)" in run.missing and run.journals == {}


def test_results_malformed_events_are_set_aside_by_line_and_never_read(tmp_path: Path) -> None:
    intended = [0.0, 1.0, 2.0]
    root = write_run(tmp_path / "run", requests_frame(intended, [10.0, 10.0, 10.0]), events=[
        {"type": "run_start", "t_s": 0.0},
        {"type": "fault_begin", "t_s": 1.0, "name": "kill"},
        {"type": "run_end", "t_s": 3.0, "duration_s": "three"},
        {"type": "abort", "t_s": 2.0, "reason": "stop condition met"},
    ])
    run = load_run(root)
    assert [e["type"] for e in run.events] == ["run_start", "abort"]
    assert [m.line for m in run.malformed_events] == [2, 3]
    assert "fault_begin" in run.malformed_events[0].reason and "duration_s" in run.malformed_events[1].reason
    assert any(entry.startswith("events.jsonl line 2 (refused:") for entry in run.missing)
    assert run.duration_s == 2.0 + 10.0 / 1000.0  # the refused run_end's duration is not used


def test_results_well_formed_events_leave_nothing_refused(tmp_path: Path) -> None:
    root = write_run(tmp_path / "run", requests_frame([0.0], [10.0]), events=[
        {"type": "run_start", "t_s": 0.0}, {"type": "run_end", "t_s": 1.0, "duration_s": 1.0}])
    run = load_run(root)
    assert run.malformed_events == [] and run.duration_s == 1.0
    assert not any("events.jsonl" in entry for entry in run.missing)
