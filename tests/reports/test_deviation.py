"""A pass never hides a deviated steady-state hypothesis, and a stretch without data is no miss."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

from benchmarks.synth import make_results
from rushhour.reports import build_reports
from rushhour.reports.build import exit_code
from tests.reports.helpers import requests_frame, write_run


def _deviated(root: Path, *, fail_on_deviation: bool = False) -> Path:
    journal_path = root / "chaos" / "kill-gpu.journal.json"
    journal = json.loads(journal_path.read_text())
    journal["deviated"] = True
    journal["status"] = "failed"
    journal["steady_states"]["after"]["steady_state_met"] = False
    journal_path.write_text(json.dumps(journal))
    scenario = yaml.safe_load((root / "scenario.yaml").read_text())
    scenario["fail_on_deviation"] = fail_on_deviation
    (root / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    return root


@pytest.fixture(scope="module")
def deviated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = _deviated(make_results(tmp_path_factory.mktemp("deviation") / "run", n_requests=3000))
    return root, build_reports(root)


def test_deviation_a_pass_names_the_deviated_hypothesis_in_the_verdict(deviated: tuple[Path, dict]) -> None:
    root, summary = deviated
    assert summary["verdict"] == "pass" and exit_code(summary) == 0
    assert summary["deviations"] == ["kill-gpu"]
    assert "1 hypothesis deviated: kill-gpu" in summary["verdict_reason"]
    first = summary["findings"][0]
    assert first["text"].startswith("Pass, 1 hypothesis deviated: kill-gpu") and first["severity"] == "warn"
    assert "Clean pass" not in json.dumps(summary["findings"])
    assert "1 hypothesis deviated: kill-gpu" in (root / "report.md").read_text().split("\n")[2]


def test_deviation_is_a_failed_junit_case(deviated: tuple[Path, dict]) -> None:
    suite = ET.parse(deviated[0] / "junit.xml").getroot()
    failed = {case.get("name"): case.find("failure") for case in suite.iter("testcase") if case.find("failure") is not None}
    assert list(failed) == ["kill-gpu"] and "steady-state hypothesis" in (getattr(failed["kill-gpu"], "attrib", {}).get("message") or "")


def test_deviation_fails_the_drill_when_the_scenario_says_so(tmp_path: Path) -> None:
    root = _deviated(make_results(tmp_path / "run", n_requests=3000), fail_on_deviation=True)
    summary = build_reports(root)
    assert summary["verdict"] == "fail" and exit_code(summary) == 1
    assert "kill-gpu" in summary["verdict_reason"] and "fail_on_deviation" in summary["verdict_reason"]


def test_deviation_a_phase_stretch_without_requests_is_no_data_not_missed(tmp_path: Path) -> None:
    # requests only in the first phase; the second phase's stretch holds none
    frame = requests_frame(np.arange(0.0, 5.0, 0.05), np.full(100, 50.0))
    events = [{"type": "phase", "t_s": 0.0, "name": "warm", "start_s": 0.0, "end_s": 5.0},
              {"type": "phase", "t_s": 5.0, "name": "quiet", "start_s": 5.0, "end_s": 10.0},
              {"type": "run_end", "t_s": 10.0, "duration_s": 10.0}]
    slos = [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 500}]
    root = write_run(tmp_path / "run", frame, events=events, scenario={"slos": slos})
    summary = build_reports(root)
    quiet = [p for p in summary["slos"][0]["phases"] if p["phase"] == "quiet"]
    assert quiet and quiet[0]["samples"] == 0
    html = (root / "report.html").read_text()
    table = html[html.index('id="slo-phases"'):]
    table = table[:table.index("</table>")]
    assert "no data" in table and "✗" not in table
