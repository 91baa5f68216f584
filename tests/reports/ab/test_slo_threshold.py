"""A latency SLO's own A/B threshold: the percentile judged against it, carried through the ab
event and ab.json, so a report rebuilt from the results folder judges the same."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rushhour.kernel.contract import AB_HTML_FILE, AB_JSON_FILE, AB_MD_FILE
from rushhour.reports.ab.build import build_ab
from rushhour.reports.ab.groups import compare_populations, populations
from rushhour.reports.rundata.results import ResultsError
from rushhour.reports.schema import SloSpec
from rushhour.scenarios.ab.trials import TrialDesign
from tests.reports.ab.simulate import simulate
from tests.reports.helpers import write_run

PAIRS = 48
SLO = {"name": "p50-paid", "kind": "latency", "percentile": 50, "threshold_ms": 5000, "priority": "paid"}


@pytest.fixture(scope="module")
def slower() -> pd.DataFrame:
    """A night whose candidate is x1.2 slower on every request: 7,200 answers per arm."""
    return simulate(1.2, pairs=PAIRS, per_trial=150, seed=4, interleave="requests")


def _folder(tmp_path: Path, requests: pd.DataFrame, *, own: float | None, recorded: object = None) -> Path:
    design = TrialDesign.build(float(PAIRS * 2), PAIRS * 2, 5, "requests")
    slo = {**SLO, "ab_threshold": own} if own is not None else SLO
    ab = {"type": "ab", "t_s": 0.0, "threshold": 1.1, "confidence": 0.9, "design": design.as_dict(),
          "targets": {"baseline": "http://127.0.0.1:1", "candidate": "http://127.0.0.1:2"}}
    if recorded is not None:
        ab["slo_thresholds"] = recorded
    events = [{"type": "run_start", "t_s": 0.0}, ab, {"type": "generator", "cpu_max": 0.2},
              {"type": "run_end", "duration_s": float(PAIRS * 2)}]
    return write_run(tmp_path / "run", requests, scenario={"slos": [slo]}, events=events)


def test_the_slo_threshold_decides_a_x1_2_change(slower: pd.DataFrame) -> None:
    pops = populations([SloSpec(**SLO)], ["free", "paid"])
    kwargs = {"pairs": PAIRS, "threshold": 1.10, "confidence": 0.9, "seed": 1}
    [run_wide] = compare_populations(slower, pops, **kwargs)  # type: ignore[arg-type]
    [own] = compare_populations(slower, pops, **kwargs, thresholds={"p50-paid": 1.25})  # type: ignore[arg-type]
    assert 1.15 < run_wide.ratio.ratio < 1.25 and run_wide.ratio.low > 1.0
    assert run_wide.verdict == "regression" and run_wide.threshold == 1.10
    assert own.ratio.high < 1.25 and own.verdict == "no_regression" and own.threshold == 1.25
    assert "below the x1.25 threshold" in own.reason


def test_the_threshold_goes_through_ab_json_and_a_rebuilt_report(tmp_path: Path, slower: pd.DataFrame) -> None:
    root = _folder(tmp_path, slower, own=1.25, recorded={"p50-paid": 1.25})
    doc = build_ab(root)
    assert doc["verdict"] == "no_regression" and doc["exit_code"] == 0
    assert "below the x1.25 threshold" in doc["sentence"] and "P50 of paid" in doc["sentence"]
    written = json.loads((root / AB_JSON_FILE).read_text())
    assert written["slo_thresholds"] == {"p50-paid": 1.25} and written["groups"][0]["threshold"] == 1.25
    assert "p50-paid x1.25" in (root / AB_MD_FILE).read_text() and "(p50-paid x1.25)" in (root / AB_HTML_FILE).read_text()
    (root / AB_JSON_FILE).unlink()
    assert build_ab(root)["sentence"] == doc["sentence"]


def test_the_recorded_threshold_is_the_one_judged(tmp_path: Path, slower: pd.DataFrame) -> None:
    """The ab event's record stands even where the stored scenario gives none."""
    assert build_ab(_folder(tmp_path, slower, own=None, recorded={"p50-paid": 1.25}))["verdict"] == "no_regression"


def test_without_an_slo_threshold_the_run_threshold_flags_it(tmp_path: Path, slower: pd.DataFrame) -> None:
    doc = build_ab(_folder(tmp_path, slower, own=None))
    assert doc["verdict"] == "regression" and doc["slo_thresholds"] == {} and "x1.1 threshold" in doc["sentence"]


def test_a_recorded_threshold_of_1_is_refused(tmp_path: Path, slower: pd.DataFrame) -> None:
    with pytest.raises(ResultsError, match='SLO "p50-paid" the threshold 1.0; a threshold is a ratio above 1'):
        build_ab(_folder(tmp_path, slower, own=None, recorded={"p50-paid": 1.0}))
