"""benchmarks.gate_reanalyse: finished nights judged again with other SLOs, on the same requests."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from benchmarks.gate_reanalyse import main, night_folders, rates, rejudge
from rushhour.scenarios.ab.trials import TrialDesign
from tests.reports.ab.simulate import simulate
from tests.reports.helpers import write_run

PAIRS = 24
P99 = {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000, "priority": "paid"}
P50 = {"name": "p50", "kind": "latency", "percentile": 50, "threshold_ms": 5000, "priority": "paid"}


def _night(workdir: Path, name: str, requests: pd.DataFrame) -> Path:
    design = TrialDesign.build(float(PAIRS * 2), PAIRS * 2, 5)
    events = [{"type": "run_start", "t_s": 0.0},
              {"type": "ab", "t_s": 0.0, "threshold": 1.1, "confidence": 0.9, "design": design.as_dict(),
               "targets": {"baseline": "http://127.0.0.1:1", "candidate": "http://127.0.0.1:2"}},
              {"type": "generator", "cpu_max": 0.2}, {"type": "run_end", "duration_s": float(PAIRS * 2)}]
    return write_run(workdir / "nights" / name / "results", requests.assign(sent_s=requests["intended_s"]),
                     scenario={"slos": [P99]}, events=events)


def test_rejudge_uses_the_given_slos_on_the_same_requests(tmp_path: Path) -> None:
    folder = _night(tmp_path, "01-slowed", simulate(1.6, pairs=PAIRS, per_trial=40, seed=4))
    before = (folder / "scenario.yaml").read_text()
    doc = rejudge(folder, [P99, P50])
    assert [g["slo"] for g in doc["groups"]] == ["p99", "p50"]
    assert doc["verdict"] == "regression" and doc["exit_code"] == 1
    assert (folder / "scenario.yaml").read_text() == before  # the night's own folder is left as it was
    assert not (folder / "ab.json").exists()


def test_main_counts_flagged_nights_per_kind(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _night(work, "01-slowed", simulate(1.6, pairs=PAIRS, per_trial=40, seed=4))
    _night(work, "02-same", simulate(1.0, pairs=PAIRS, per_trial=40, seed=5))
    (work / "nights" / "03-same").mkdir(parents=True)  # a night that left no results is not counted
    assert [kind for kind, _ in night_folders(work)] == ["slowed", "same"]
    scenario = tmp_path / "nightly.yaml"
    scenario.write_text(json.dumps({"slos": [P50]}))
    main([str(work), "--scenario", str(scenario), "--out", str(tmp_path / "out.json")])
    result = json.loads((tmp_path / "out.json").read_text())
    [run] = result["runs"]
    assert run["rates"]["slowed"] == {"nights": 1, "flagged": 1, "rate": 1.0}
    assert run["rates"]["same"]["flagged"] == 0
    assert [g["slo"] for g in run["nights"][0]["groups"]] == ["p50"]
    assert rates([]) == {}
