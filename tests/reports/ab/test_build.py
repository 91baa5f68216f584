"""ab.json, ab.md, ab.html and junit.xml built from A/B results folders of known truth."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from rushhour.kernel.contract import AB_HTML_FILE, AB_JSON_FILE, AB_MD_FILE, JUNIT_FILE
from rushhour.reports.ab.build import build_ab, is_ab_folder
from rushhour.reports.rundata.results import ResultsError
from rushhour.scenarios.ab.trials import TrialDesign
from tests.reports.ab.simulate import simulate
from tests.reports.helpers import write_run

SLO = {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000, "priority": "paid"}
PAIRS = 48


def _night(effect: float, *, seed: int, **kwargs: object) -> pd.DataFrame:
    """A simulated night with random arms per slice: 2,880 requests per arm, enough for P99."""
    return simulate(effect, pairs=PAIRS, per_trial=60, seed=seed, interleave="requests", **kwargs)  # type: ignore[arg-type]


def _folder(tmp_path: Path, requests: pd.DataFrame, *, slos: list[dict] | None = None, lag_ms: float = 0.0,
            interleave: str = "requests", calibration: dict | None = None) -> Path:
    design = TrialDesign.build(float(PAIRS * 2), PAIRS * 2, 5, interleave)
    requests = requests.assign(sent_s=requests["intended_s"] + lag_ms / 1000.0)
    events = [{"type": "run_start", "t_s": 0.0},
              {"type": "ab", "t_s": 0.0, "threshold": 1.1, "confidence": 0.9, "design": design.as_dict(),
               "targets": {"baseline": "http://127.0.0.1:1", "candidate": "http://127.0.0.1:2"},
               "calibration": calibration},
              {"type": "generator", "cpu_max": 0.2}, {"type": "run_end", "duration_s": float(PAIRS * 2)}]
    return write_run(tmp_path / "run", requests, scenario={"slos": [SLO] if slos is None else slos}, events=events)


def _strict(path: Path) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"{path} holds {name}, which is not JSON")
    return json.loads(path.read_text(), parse_constant=refuse)


def test_build_ab_slowdown_is_a_regression_with_every_file(tmp_path: Path) -> None:
    root = _folder(tmp_path, _night(1.5, seed=2))
    doc = build_ab(root)
    assert doc["verdict"] == "regression" and doc["exit_code"] == 1
    [group] = doc["groups"]
    assert group["ci_low"] > 1.0 and 1.3 < group["ratio"] < 1.7
    assert _strict(root / AB_JSON_FILE)["sentence"] == doc["sentence"]
    assert doc["sentence"].startswith("Regression:") and "x1.1 threshold" in doc["sentence"]
    assert "data:image/png;base64," in (root / AB_HTML_FILE).read_text()
    assert doc["sentence"] in (root / AB_MD_FILE).read_text()
    suite = ET.parse(root / JUNIT_FILE).getroot()
    assert suite.get("failures") == "1" and suite.get("errors") == "0"
    assert [t["arm"] for t in doc["trials"]] == list(TrialDesign.build(float(PAIRS * 2), PAIRS * 2, 5, "requests").arms)


def test_build_ab_instant_failures_in_the_candidate_are_a_regression(tmp_path: Path) -> None:
    root = _folder(tmp_path, _night(1.0, seed=4, fail_share=0.10))
    doc = build_ab(root)
    [group] = doc["groups"]
    assert doc["exit_code"] == 1 and group["errors"]["worse"]
    assert group["ratio"] is not None and group["candidate_ms"] > 0  # percentiles over answered requests only
    assert doc["arms"]["candidate"]["error_share"] == pytest.approx(0.10, abs=0.02)
    assert doc["sentence"].startswith("Regression: the candidate failed")


def test_build_ab_cache_warm_baseline_against_a_cold_twin_is_invalid(tmp_path: Path) -> None:
    requests = _night(1.0, seed=6)
    baseline = requests["arm"] == "baseline"
    requests["cached"] = baseline.to_numpy()  # the baseline had seen every text
    requests.loc[baseline, "latency_ms"] = requests.loc[baseline, "latency_ms"] / 13.0
    doc = build_ab(_folder(tmp_path, requests))
    assert doc["verdict"] == "invalid" and doc["exit_code"] == 3
    assert "the baseline answered 100% of requests from its cache and the candidate 0%" in doc["sentence"]
    assert "regression" not in doc["sentence"].lower()
    assert doc["cache"]["baseline"] == 1.0 and doc["cache"]["candidate"] == 0.0


def test_build_ab_one_arm_answering_from_cache_shows_in_the_latency_mixture(tmp_path: Path) -> None:
    requests = _night(1.0, seed=6)  # no cached column: a protocol that does not report cache hits
    warm = (requests["arm"] == "baseline").to_numpy() & (requests.index.to_numpy() % 10 < 9)
    requests.loc[warm, "latency_ms"] = 2.6  # nine in ten of the baseline's answers from its cache
    doc = build_ab(_folder(tmp_path, requests))
    assert doc["verdict"] == "invalid" and doc["cache"]["method"] == "latency mixture"
    assert "in under a tenth of the candidate's median time" in doc["sentence"]


def test_build_ab_three_times_slower_candidate_is_a_regression_not_a_cache(tmp_path: Path) -> None:
    doc = build_ab(_folder(tmp_path, _night(3.0, seed=2)))
    assert doc["verdict"] == "regression" and not doc["cache"]["confounded"]


def test_build_ab_equal_cache_shares_are_no_confound(tmp_path: Path) -> None:
    requests = _night(1.5, seed=2)
    requests["cached"] = (requests.index.to_numpy() % 5) == 0  # a fifth from cache in both arms
    doc = build_ab(_folder(tmp_path, requests))
    assert doc["verdict"] == "regression" and not doc["cache"]["confounded"]
    assert doc["cache"]["baseline"] == pytest.approx(0.2, abs=0.03)


def test_build_ab_quiet_same_code_with_rare_failures_in_both_arms_passes_and_quotes_the_runner(tmp_path: Path) -> None:
    requests = _night(1.0, seed=8, fail_share=0.0025, base_fail_share=0.0025)
    requests["latency_ms"] = requests["latency_ms"] / (requests["latency_ms"] / 200.0) ** 0.9  # a quiet machine
    calibration = {"nights": 30, "false_alarms": 0, "false_alarm_bound": 0.0950, "bound_confidence": 0.95,
                   "mde": 1.12}
    doc = build_ab(_folder(tmp_path, requests, calibration=calibration))
    assert doc["verdict"] == "no_regression" and doc["exit_code"] == 0, doc["sentence"]
    assert doc["arms"]["baseline"]["failed"] > 0 and doc["arms"]["candidate"]["failed"] > 0
    assert "shown not worse by more than 0.50 percentage points" in doc["sentence"]
    assert doc["sentence"].endswith("on this runner: 0 false alarms in 30 nights, <= 9.5% at 95%; detects x1.12.")


def test_build_ab_without_calibration_says_the_runner_is_uncalibrated(tmp_path: Path) -> None:
    doc = build_ab(_folder(tmp_path, _night(1.5, seed=2)))
    assert "this runner is not calibrated" in doc["sentence"]


def test_build_ab_generator_behind_schedule_is_invalid(tmp_path: Path) -> None:
    root = _folder(tmp_path, _night(1.5, seed=2), lag_ms=400.0)
    doc = build_ab(root)
    assert doc["verdict"] == "invalid" and doc["exit_code"] == 3
    assert "schedule lag" in doc["sentence"]


def test_build_ab_too_few_answers_is_inconclusive_with_the_reason(tmp_path: Path) -> None:
    requests = _night(1.0, seed=2)
    root = _folder(tmp_path, requests[requests["trial"] < 8])  # four pairs hold requests
    doc = build_ab(root)
    assert doc["verdict"] == "inconclusive" and doc["exit_code"] == 3
    assert "no percentile could be compared" in doc["sentence"]
    assert "P99 needs 1,000 answered requests per arm" in doc["sentence"]


def test_build_ab_refuses_a_folder_that_is_not_an_ab_run(tmp_path: Path) -> None:
    requests = simulate(1.0, pairs=4, per_trial=5, seed=1).drop(columns=["arm", "trial"])
    root = write_run(tmp_path / "drill", requests, scenario={"slos": [SLO]}, events=[{"type": "run_start"}])
    assert not is_ab_folder(root)
    with pytest.raises(ResultsError, match="not the folder of an A/B run"):
        build_ab(root)


@pytest.mark.parametrize("name", ["threshold", "confidence"])
def test_build_ab_never_puts_a_default_in_place_of_a_lost_setting(tmp_path: Path, name: str) -> None:
    # the verdict stands on the threshold and the confidence the run recorded: an ab event without
    # one is refused by name, never judged against a made-up 1.10 or 90%
    root = _folder(tmp_path, _night(1.3, seed=2))
    events_file = root / "events.jsonl"
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    events = [{k: v for k, v in e.items() if not (e["type"] == "ab" and k == name)} for e in events]
    events_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    with pytest.raises(ResultsError, match=f"no valid {name}"):
        build_ab(root)
    assert not (root / AB_JSON_FILE).exists()


def test_report_command_rebuilds_an_ab_folder_with_its_exit_code(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rushhour.scenarios.cli.report import report

    root = _folder(tmp_path, _night(1.5, seed=2))
    result = CliRunner().invoke(report, [str(root)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == _strict(root / AB_JSON_FILE)["sentence"]
    assert (root / AB_HTML_FILE).exists() and not (root / "summary.json").exists()  # not a drill's report


def test_reports_say_how_the_arms_were_interleaved(tmp_path: Path) -> None:
    from rushhour.reports.ab.render import design_text

    trials = TrialDesign.build(96.0, 48, 5)
    requests = TrialDesign.build(96.0, 48, 5, interleave="requests")
    assert design_text(trials.as_dict()) == "48 trials of 2.00 s in ABBA blocks (order from seed 5)"
    assert design_text(requests.as_dict()) == "24 slices of 4.00 s, each request to an arm drawn at random (seed 5)"
    root = _folder(tmp_path, simulate(1.0, pairs=PAIRS, per_trial=30, seed=3), interleave="trials")
    build_ab(root)
    assert "in ABBA blocks (order from seed 5)" in (root / AB_MD_FILE).read_text()
    assert "in ABBA blocks (order from seed 5)" in (root / AB_HTML_FILE).read_text()
