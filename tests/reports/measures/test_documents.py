"""The long-documents block: time to first segment vs full document, in summary and reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.reports import build_reports
from rushhour.reports.measures.documents import documents_section
from rushhour.reports.rundata.results import load_run
from tests.reports.helpers import requests_frame, write_run


def _frame() -> pd.DataFrame:
    """10 jobs (8 ok, 1 failed, 1 timed out) and 4 plain translate rows that must not count."""
    latency = [1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0, 7000.0, 8000.0, 9000.0, np.nan,
               10.0, 20.0, 30.0, 40.0]
    ok = [True] * 8 + [False, False] + [True] * 4
    first = [800.0, 100.0, 300.0, 200.0, 700.0, 400.0, 600.0, 500.0, 50.0, 60.0] + [np.nan] * 4
    frame = requests_frame(np.arange(14.0), latency, ok, first_segment_ms=first,
                           via=["job"] * 10 + ["translate"] * 4,
                           error=[""] * 8 + ["deadline_exceeded", "timeout"] + [""] * 4)
    frame["chars"] = [1000, 3000, 2000, 1500, 2500, 1200, 2800, 1800, 5000, 5000, 20, 20, 20, 20]
    return frame


def test_documents_section_percentiles_are_nearest_rank_over_ok_jobs() -> None:
    section = documents_section(_frame())
    assert section is not None
    assert (section["count"], section["ok"], section["failed"], section["timeouts"]) == (10, 8, 2, 1)
    # ok first segments sorted: 100..800; nearest rank P50 = 4th of 8, P95 = 8th of 8
    assert section["first_segment_ms"] == {"p50": 400.0, "p95": 800.0, "samples": 8}
    assert section["full_document_ms"] == {"p50": 4000.0, "p95": 8000.0, "samples": 8}
    # ok lengths sorted: 1000 1200 1500 1800 2000 2500 2800 3000 -> 4th is 1800
    assert section["chars_p50"] == 1800.0


def test_documents_section_absent_without_job_rows() -> None:
    frame = _frame()
    frame["via"] = "translate"
    assert documents_section(frame) is None


def test_documents_section_with_no_ok_job_has_empty_percentiles() -> None:
    frame = _frame()
    frame["ok"] = False
    section = documents_section(frame)
    assert section is not None and section["ok"] == 0
    assert section["first_segment_ms"] == {"p50": None, "p95": None, "samples": 0}


@pytest.mark.slow
def test_report_renders_the_documents_table_and_line(tmp_path: Path) -> None:
    root = write_run(tmp_path / "run", _frame())
    summary = build_reports(root)
    on_disk = json.loads((root / "summary.json").read_text())
    assert on_disk["documents"]["first_segment_ms"]["p95"] == 800.0 == summary["documents"]["first_segment_ms"]["p95"]
    html = (root / "report.html").read_text()
    assert "Long documents: time to first segment vs full document" in html
    assert "400.0 ms" in html and "8,000.0 ms" in html
    markdown = (root / "report.md").read_text()
    assert "Long documents via jobs: 8/10 ok · first segment P50 400.0 ms" in markdown
    assert "full document P50 4,000.0 ms, P95 8,000.0 ms" in markdown


@pytest.mark.slow
def test_older_results_without_job_columns_still_report(tmp_path: Path) -> None:
    root = write_run(tmp_path / "old", requests_frame(np.arange(5.0), [10.0, 20.0, 30.0, 40.0, 50.0]))
    run = load_run(root)
    assert run.requests["first_segment_ms"].isna().all() and set(run.requests["via"]) == {"translate"}
    summary = build_reports(root)
    assert "documents" not in summary
    assert "Long documents" not in (root / "report.html").read_text()
    assert "Long documents" not in (root / "report.md").read_text()
