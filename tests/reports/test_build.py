from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from benchmarks.synth import make_results
from rushhour.reports import build_reports
from rushhour.reports.build import exit_code

CHART_KEYS = ["rates", "latency_over_time", "errors_sheds", "error_degrade_rates", "latency_cdf",
              "latency_by_length", "queue_batch", "nodes_breakers", "cache_hit_ratio", "cost_rate"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = make_results(tmp_path_factory.mktemp("build") / "run", n_requests=5000)
    return root, build_reports(root)


@pytest.mark.slow
def test_build_writes_every_file_and_summary_contract(built: tuple[Path, dict]) -> None:
    root, summary = built
    for name in ("summary.json", "report.html", "report.md", "junit.xml"):
        assert (root / name).stat().st_size > 0
    on_disk = json.loads((root / "summary.json").read_text())
    assert on_disk["verdict"] == summary["verdict"] == "pass"
    for key in ("slos", "latency_ms", "latency_uncorrected_ms", "requests", "throughput_rps",
                "cost", "faults", "generator"):
        assert key in on_disk
    assert set(on_disk["latency_ms"]) == {"p50", "p95", "p99", "p999"}
    assert set(on_disk["requests"]) >= {"scheduled", "completed", "ok", "failed", "shed"}
    assert set(on_disk["cost"]) >= {"total_usd", "chars", "usd_per_1k_chars", "by_pool"}
    assert set(on_disk["faults"][0]) >= {"name", "start_s", "end_s", "failed_requests",
                                         "p99_during_ms", "recovery_s"}
    assert set(on_disk["generator"]) >= {"schedule_lag_p99_ms", "cpu_max", "valid"}
    assert set(on_disk["slos"][0]) >= {"name", "objective", "measured", "met", "budget_consumed",
                                       "samples", "ci"}
    assert on_disk["environment"]["git_commit"] == "abc1234"


def test_html_has_every_chart_and_is_self_contained(built: tuple[Path, dict]) -> None:
    html = (built[0] / "report.html").read_text()
    assert re.findall(r'<h3 id="chart-([a-z_]+)"', html) == CHART_KEYS
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', html)) == len(CHART_KEYS)
    assert not re.search(r'(src|href)="https?://', html)
    assert "<link" not in html and "<script" not in html
    assert "kill-gpu" in html and "per 1k characters" in html


@pytest.mark.slow
def test_junit_has_one_case_per_slo_and_fault(built: tuple[Path, dict]) -> None:
    suite = ET.parse(built[0] / "junit.xml").getroot()
    names = [(case.get("classname"), case.get("name")) for case in suite.iter("testcase")]
    assert names[:5] == [("slo", "p99"), ("slo", "p95-paid"), ("slo", "availability"),
                         ("slo", "degraded-share"), ("fault_recovery", "kill-gpu")]
    assert suite.get("failures") == "0"


@pytest.mark.slow
def test_missed_slo_fails_with_junit_failure(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=3000)
    scenario = yaml.safe_load((root / "scenario.yaml").read_text())
    scenario["slos"][0]["threshold_ms"] = 200  # P99 is ~700 ms
    (root / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    summary = build_reports(root)
    assert summary["verdict"] == "fail" and exit_code(summary) == 1
    suite = ET.parse(root / "junit.xml").getroot()
    failed = [case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None]
    # a service never within 200 ms never recovers from the fault either: both are failed cases
    assert failed == ["p99", "kill-gpu"] and suite.get("failures") == "2"
    assert "❌" in (root / "report.md").read_text()


@pytest.mark.slow
def test_saturated_generator_makes_run_invalid(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=3000, lag_ms=200.0)
    summary = build_reports(root)
    assert summary["verdict"] == "invalid" and exit_code(summary) == 3
    assert summary["generator"]["valid"] is False
    assert "load generator, not the server, was the bottleneck" in (root / "report.html").read_text()


@pytest.mark.slow
def test_report_renders_with_only_required_files(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=2000)
    for name in ("server_metrics.parquet", "events.jsonl", "schedule.parquet"):
        (root / name).unlink()
    for path in (root / "chaos").iterdir():
        path.unlink()
    (root / "chaos").rmdir()
    summary = build_reports(root)
    assert summary["cost"]["known"] is False
    assert set(summary["missing"]) == {"server_metrics.parquet", "events.jsonl", "schedule.parquet",
                                       "chaos/*.journal.json"}
    html = (root / "report.html").read_text()
    assert "Cost unknown" in html and "server_metrics.parquet is missing" in html
    assert html.count('<h3 id="chart-') == len(CHART_KEYS)


@pytest.mark.slow
def test_build_with_baseline_adds_comparison(tmp_path: Path) -> None:
    # 20,000 requests: with fewer, every group's failures (clustered in the fault window, resampled
    # in blocks) can reach 1% in a resample, its P99 a failure on both sides and no change shown.
    base = make_results(tmp_path / "base", n_requests=20_000, seed=5)
    cur = make_results(tmp_path / "cur", n_requests=20_000, seed=5, slowdown=1.3)
    summary = build_reports(cur, baseline=base)
    assert summary["comparison"]["verdict"] == "regression" and exit_code(summary) == 1
    assert "Comparison with baseline" in (cur / "report.html").read_text()
    suite = ET.parse(cur / "junit.xml").getroot()
    assert any(case.get("classname") == "regression" and case.find("failure") is not None
               for case in suite.iter("testcase"))


@pytest.mark.slow
def test_edge_runs_render_without_warnings(tmp_path: Path) -> None:
    import numpy as np

    from tests.reports.helpers import requests_frame, write_run

    slos = {"slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 100}]}
    empty = build_reports(write_run(tmp_path / "empty", requests_frame([], []), scenario=slos))
    assert empty["verdict"] == "invalid"
    # Every request sent and none answered: each counts as failed at the run's end
    # (19 s, the last send), so there is a latency distribution to draw, and the SLO fails.
    failing = write_run(tmp_path / "fail", requests_frame(np.arange(20.0), np.full(20, np.nan), ok=[False] * 20),
                        scenario=slos, events=[{"type": "fault_start", "t_s": 5, "name": "x"}])
    summary = build_reports(failing)
    assert summary["verdict"] == "fail" and summary["faults"][0]["recovered"] is False
    assert summary["requests"]["end_imputed"] == 20 and summary["latency_ms"]["p50"] == 9_000.0  # 19 s - t: 0..19 s, rank 10
    assert summary["slos"][0]["measured_ok_only_ms"] is None
    never = write_run(tmp_path / "never", requests_frame(np.arange(5.0), np.full(5, np.nan), ok=[False] * 5)
                      .assign(sent_s=np.nan), scenario=slos)
    assert build_reports(never)["requests"]["not_sent"] == 5
    assert "No request was attempted" in (never / "report.html").read_text()


@pytest.mark.slow
def test_a_calibrated_peak_is_stated_in_the_summary_and_both_reports(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=2000)
    scenario = yaml.safe_load((root / "scenario.yaml").read_text())
    scenario["traffic"]["peak_rps"] = 60.78
    scenario["traffic"]["calibration"] = {"factor": 0.6, "condition": "n-1", "capacity_rps": 101.3, "peak_rps": 60.78,
                                          "note": "measured 2026-12-01T08:00:00Z, cached", "key": "k"}
    (root / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    summary = build_reports(root)
    text = "peak 60.78 req/s = 0.6x the N-1 capacity of 101.3 req/s measured on this machine"
    assert summary["scenario"]["peak_rps"] == 60.78 and summary["scenario"]["calibration"]["text"].startswith(text)
    assert text in (root / "report.html").read_text() and text in (root / "report.md").read_text()
    plain = make_results(tmp_path / "plain", n_requests=500)
    assert build_reports(plain)["scenario"]["calibration"] is None
