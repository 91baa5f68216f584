"""The leak audit and the scraper's health reach summary.json, the report and JUnit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.synth import make_results
from rushhour.reports.build import build_reports

LEFT_BEHIND = {"type": "leak_audit", "t_s": 61.0, "clean": False, "checked": ["faults", "nodes"], "skipped": [],
               "findings": [{"kind": "fault", "target": "quality-1", "detail": "partition still active"}],
               "actions": ["POST /admin/reset"]}


def _append(root: Path, *events: dict[str, object]) -> None:
    with (root / "events.jsonl").open("a", encoding="utf-8") as handle:
        for event in events:
            handle.write(json.dumps(event) + "\n")


@pytest.mark.slow
def test_a_leak_shows_in_the_summary_report_and_junit(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=1000)
    _append(root, LEFT_BEHIND,
            {"type": "scraper_error", "t_s": 12.0, "endpoint": "/v1/events", "reason": "HTTP 500", "errors": 1, "total": 1},
            {"type": "scraper", "t_s": 60.0, "samples": 58, "errors": {"/v1/status": 0, "/v1/events": 3}, "failed": 3})
    summary = build_reports(root)
    assert summary["leak_audit"]["clean"] is False
    assert summary["scraper"]["error_events"] == 1 and summary["scraper"]["failed"] == 3
    assert json.loads((root / "summary.json").read_text())["leak_audit"]["findings"][0]["target"] == "quality-1"
    html = (root / "report.html").read_text()
    assert "left something behind" in html and "partition still active" in html and "scraper failed 1 time" in html
    assert "left something behind" in (root / "report.md").read_text()
    junit = (root / "junit.xml").read_text()
    assert 'name="nothing left behind"' in junit and "partition still active" in junit


@pytest.mark.slow
def test_a_clean_audit_is_a_passing_junit_case_and_no_banner(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=1000)
    _append(root, dict(LEFT_BEHIND, clean=True, findings=[], actions=[]))
    summary = build_reports(root)
    assert summary["leak_audit"]["clean"] is True and summary["scraper"] is None
    assert "left something behind" not in (root / "report.html").read_text()
    junit = (root / "junit.xml").read_text()
    assert 'name="nothing left behind"' in junit and "partition" not in junit
