"""The facts a run's summary shares (fault windows, phases, judged SLOs) are derived once and read
by every section: ground truth written into a results folder here."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from rushhour.reports.measures.facts import IMPLICIT_SLO, RunFacts
from rushhour.reports.rundata.results import RunData, load_run
from rushhour.reports.summary.aggregate import summarise
from tests.reports.helpers import requests_frame, write_run

EVENTS = [
    {"type": "phase", "t_s": 0.0, "name": "calm", "start_s": 0.0, "end_s": 5.0},
    {"type": "phase", "t_s": 5.0, "name": "peak", "start_s": 5.0, "end_s": 10.0},
    {"type": "fault_start", "t_s": 3.0, "name": "kill", "experiment": "kill.json"},
    {"type": "fault_end", "t_s": 6.0, "name": "kill", "experiment": "kill.json"},
    {"type": "run_end", "t_s": 10.0, "duration_s": 10.0},
]


def _run(tmp_path: Path, scenario: dict[str, object] | None = None) -> RunData:
    frame = requests_frame(np.arange(20.0) / 2, np.full(20, 50.0))
    return load_run(write_run(tmp_path / "run", frame, events=EVENTS, scenario=scenario))


def test_facts_hold_the_fault_windows_phases_and_implicit_slo(tmp_path: Path) -> None:
    facts = RunFacts.of(_run(tmp_path, {"slos": []}))
    assert [(w.name, w.start_s, w.end_s) for w in facts.windows] == [("kill", 3.0, 6.0)]
    assert list(facts.phases.iloc[[0, 9, 10, 19]]) == ["calm", "calm", "peak", "peak"]
    assert facts.slos == [IMPLICIT_SLO] and facts.implicit_slo is not None


def test_summarise_reads_the_fault_windows_from_the_facts_it_is_given(tmp_path: Path) -> None:
    run = _run(tmp_path)
    facts = RunFacts.of(run)
    assert [f["name"] for f in summarise(run, facts)["faults"]] == ["kill"]
    none = dataclasses.replace(facts, windows=[])
    assert summarise(run, none)["faults"] == []
