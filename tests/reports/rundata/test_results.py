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
