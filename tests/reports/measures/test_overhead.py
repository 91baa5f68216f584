"""The harness's overhead in the report: the figures beside the run's, and SLOs too tight to judge."""

from __future__ import annotations

import json

import numpy as np

from rushhour.reports import build_reports
from rushhour.reports.measures.overhead import TIGHT_TEXT, flag_tight_slos, overhead_section
from tests.reports.helpers import requests_frame, write_run

OVERHEAD = {"type": "harness_overhead", "t_s": 0.0, "source": "harness", "peak_rps": 40.0, "at_rps": 50.0,
            "max_valid_rps_per_process": 1000.0, "latency_ms": {"p50": 4.0, "p99": 20.0, "p99_9": 30.0},
            "ttft_ms": None, "measured_at": "2026-12-01T17:00:00+00:00", "cached": True, "steps": []}
SLOS = [{"name": "tight", "kind": "latency", "objective": 50.0}, {"name": "roomy", "kind": "latency", "objective": 60.0},
        {"name": "ttft", "kind": "ttft", "objective": 10.0}, {"name": "avail", "kind": "availability", "objective": 0.99}]


def test_slos_within_three_times_the_harness_p99_are_flagged_and_no_others() -> None:
    section = overhead_section([OVERHEAD], {"p50": 40.0, "p99": 80.0, "p999": 90.0}, SLOS)
    assert section is not None
    # 50 < 3 x 20 is flagged, 60 is not; a TTFT SLO without TTFT figures is held against the latency's
    assert [row["name"] for row in section["tight_slos"]] == ["tight", "ttft"]
    assert section["p99_share_of_run"] == 0.25
    flagged = flag_tight_slos(SLOS, section)
    assert TIGHT_TEXT in flagged[0]["too_tight"] and "too_tight" not in flagged[1]


def test_no_event_no_section_and_a_failed_check_says_why() -> None:
    assert overhead_section([], {"p99": 1.0}, SLOS) is None
    failed = overhead_section([{"type": "harness_overhead", "error": "boom"}], {"p99": 1.0}, SLOS)
    assert failed == {"measured": False, "error": "boom", "tight_slos": []}


def test_the_report_shows_the_overhead_beside_the_latencies_and_the_flag(tmp_path) -> None:
    slos = {"slos": [{"name": "p99-fast", "kind": "latency", "percentile": 99, "threshold_ms": 45}]}
    events = [OVERHEAD, {"type": "run_end", "t_s": 10.0, "duration_s": 10.0}]
    root = write_run(tmp_path / "run", requests_frame(np.arange(20.0) / 2, np.full(20, 30.0)), scenario=slos,
                     events=events)
    summary = build_reports(root)
    written = json.loads((root / "summary.json").read_text())
    assert written["harness_overhead"]["latency_ms"]["p99"] == 20.0
    assert written["harness_overhead"]["run_latency_ms"]["p99"] == summary["latency_ms"]["p99"]
    assert TIGHT_TEXT in written["slos"][0]["too_tight"]
    html, md = (root / "report.html").read_text(), (root / "report.md").read_text()
    assert "Harness overhead" in html and TIGHT_TEXT in html and "20.0 ms" in html
    assert "Harness overhead" in md and TIGHT_TEXT in md
