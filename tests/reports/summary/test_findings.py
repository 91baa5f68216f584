"""Findings from crafted results: an overlap of two faults, a generator-bound run, a clean pass.

The numbers are counted by hand from benchmarks/synth_drill.py's deterministic schedule: the peak
(130-160 s) offers 60 req/s, so 1800 requests of which every fourth (450) is paid; the overlap
(147-150 s) sheds all 180 of its requests (45 paid); the partition fails every tenth request in
150-162 s (30 paid in the peak); the node loss makes every fifth request in 131-147 s take 3 s
(48 paid).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.synth_drill import make_drill_results
from rushhour.reports.build import build_reports
from rushhour.reports.summary.finding_rules import calibration_findings
from rushhour.reports.summary.findings import headline


@pytest.fixture(scope="module")
def overlap(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build_reports(make_drill_results(tmp_path_factory.mktemp("overlap") / "run", "overlap"))


def _texts(summary: dict[str, Any], rule: str) -> list[str]:
    return [f["text"] for f in summary["findings"] if f["rule"] == rule]


@pytest.mark.slow
def test_findings_overlap_slos_in_order_of_budget_with_phase_and_numbers(overlap: dict[str, Any]) -> None:
    latency, availability = _texts(overlap, "slo")
    assert latency.startswith("p99-paid missed in peak (130–160 s): 72.7% of 450 attempts succeeded "
                              "within 2,000 ms (needs 99.0%; 123 bad), P99 3,001 ms, 2733% of its error budget")
    assert availability.startswith("availability-paid missed in peak (130–160 s): 83.3% of 450 requests "
                                   "answered (objective 99.0%), 1667% of its error budget")
    assert "burn-rate alert would have paged at" in availability
    assert [f["rule"] for f in overlap["findings"]][:2] == ["slo", "slo"]


def test_findings_overlap_names_the_faults_and_what_the_pool_had_left(overlap: dict[str, Any]) -> None:
    [text] = _texts(overlap, "overlap")
    assert text == ("gpu-node-loss (131–150 s) and network-partition (147–162 s) overlapped for 3 s "
                    "(147–150 s); the quality pool had no healthy node (of 2) for 3 s (147–150 s).")
    [finding] = [f for f in overlap["findings"] if f["rule"] == "overlap"]
    assert finding["severity"] == "bad" and finding["anchor"] == "#chart-nodes_breakers"
    assert (finding["start_s"], finding["end_s"]) == (147.0, 150.0)


@pytest.mark.slow
def test_findings_overlap_shedding_onset_and_service_limit(overlap: dict[str, Any]) -> None:
    [shed] = _texts(overlap, "shedding")
    assert shed.startswith("Shedding began at 147 s (in peak, during gpu-node-loss and network-partition)")
    assert "180 requests shed in all (180 x 503), 3.6% of scheduled" in shed
    [limit] = _texts(overlap, "limit")
    assert limit.startswith("The service, not the generator, was the limit: in peak (130–160 s) 60.0 req/s")
    assert "52.0 req/s were answered ok (86.7%)" in limit


@pytest.mark.slow
def test_findings_overlap_recovery_against_expectation(overlap: dict[str, Any]) -> None:
    texts = _texts(overlap, "recovery")
    assert len(texts) == 3
    loss = next(t for t in texts if t.startswith("gpu-node-loss"))
    assert "overlapping network-partition" in loss and "down to 0 of 2 healthy nodes" in loss
    assert "12 s after it ended (within the 19 s expected: the fault's own length)" in loss


def test_findings_anchors_exist_in_the_html(overlap: dict[str, Any]) -> None:
    html = (Path(overlap["scenario"]["results_dir"]) / "report.html").read_text()
    for finding in overlap["findings"]:
        assert f'id="{finding["anchor"][1:]}"' in html, finding["anchor"]
    assert html.index('id="findings"') < html.index('id="slos"')


@pytest.mark.slow
def test_findings_in_markdown_with_links(overlap: dict[str, Any]) -> None:
    markdown = (Path(overlap["scenario"]["results_dir"]) / "report.md").read_text()
    assert "**Findings**" in markdown
    assert "(report.html#slo-phases)" in markdown and "overlapped for 3 s" in markdown
    # 9 s before (122-131 s): 316 ok answers arrive; during: 180 of 1140 shed; after: 54 of 540 fail.
    assert "| gpu-node-loss | 101 ms · 0.0% · 35.1/s | 3,001 ms · 15.8% · 50.8/s | 101 ms · 10.0% · 53.3/s |" in markdown


@pytest.mark.slow
def test_headline_is_the_reason_and_the_worst_finding(overlap: dict[str, Any]) -> None:
    line = headline(overlap)
    assert line == overlap["headline"] and "\n" not in line
    assert line.startswith("SLO(s) missed: p99-paid, availability-paid. Worst: p99-paid missed in peak (130–160 s)")


@pytest.mark.slow
def test_findings_generator_bound_run_blames_the_generator(tmp_path: Path) -> None:
    summary = build_reports(make_drill_results(tmp_path / "run", "generator"))
    assert summary["verdict"] == "invalid"
    first = summary["findings"][0]
    assert first["rule"] == "verdict" and first["anchor"] == "#generator"
    assert "schedule lag P99 200.0 ms is above the 50 ms limit" in first["text"]
    assert not _texts(summary, "limit") and not _texts(summary, "slo")


@pytest.mark.slow
def test_findings_clean_pass_says_so_briefly(tmp_path: Path) -> None:
    summary = build_reports(make_drill_results(tmp_path / "run", "clean"))
    assert summary["verdict"] == "pass"
    [only] = summary["findings"]
    assert only["severity"] == "good"
    assert only["text"] == ("Clean pass: all 3 SLO(s) met; the most budget spent was p99-paid's 0.0%; the "
                            "generator kept up (schedule lag P99 1.0 ms, limit 50 ms); 1 of 1 fault(s) "
                            "recovered within the SLOs.")
    assert summary["headline"] == "All 3 SLO(s) met."


def _calibrated(confirmed: bool | None) -> dict[str, Any]:
    calibration = {"factor": 0.7, "condition": "none", "capacity_rps": 40.0, "peak_rps": 28.0, "confirmed": confirmed}
    return {"scenario": {"calibration": calibration}}


def test_findings_a_peak_on_an_unconfirmed_capacity_is_a_warning_that_says_what_to_do() -> None:
    [finding] = calibration_findings(_calibrated(False))
    assert finding.severity == "warn" and finding.anchor == "#calibration"
    assert "28 req/s" in finding.text and "40 req/s" in finding.text and "no second window confirmed" in finding.text
    assert "rushhour capacity --calibrate" in finding.text
    assert calibration_findings(_calibrated(True)) == [] and calibration_findings(_calibrated(None)) == []
    assert calibration_findings({"scenario": {"calibration": None}}) == []


def test_headline_keeps_a_clause_in_parentheses_whole() -> None:
    text = ("p99 missed in base (1.5–30 s): 94.9% of 175 attempts succeeded within 1,500 ms (needs 99.0%; 9 bad), "
            "P99 2,014 ms; more after it.")
    summary = {"verdict": "fail", "verdict_reason": "SLO(s) missed: p99.",
               "findings": [{"rule": "slo", "text": text}]}
    assert headline(summary) == ("SLO(s) missed: p99. Worst: p99 missed in base (1.5–30 s): 94.9% of 175 attempts "
                                 "succeeded within 1,500 ms (needs 99.0%; 9 bad), P99 2,014 ms.")
