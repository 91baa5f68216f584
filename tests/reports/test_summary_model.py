"""summary.json has one typed definition: what a run's summary holds is validated as it is built."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from reports.build import build_reports, summarise_run
from reports.facts import RunFacts
from reports.live import live_section
from reports.results import load_run
from reports.summary import summarise
from reports.summary_model import Summary
from tests.reports.helpers import requests_frame, write_run

EVENTS = [{"type": "fault_start", "t_s": 3.0, "name": "kill", "experiment": "kill.json"},
          {"type": "fault_end", "t_s": 6.0, "name": "kill", "experiment": "kill.json"},
          {"type": "run_end", "t_s": 10.0, "duration_s": 10.0}]


@pytest.mark.slow
def test_summary_json_holds_exactly_the_models_keys(tmp_path: Path) -> None:
    root = write_run(tmp_path / "run", requests_frame(np.arange(20.0) / 2, np.full(20, 50.0)), events=EVENTS)
    summary = build_reports(root)
    written = json.loads((root / "summary.json").read_text())
    assert set(written) == set(summary) <= set(Summary.model_fields)
    # neither applies here, and no overhead check ran before this run
    assert set(Summary.model_fields) - set(written) == {"documents", "comparison", "harness_overhead"}
    assert [len(f["periods"]) for f in written["faults"]] == [3]  # before, during, after: told once


def test_summary_refuses_an_unknown_key_or_a_wrong_verdict(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "run", requests_frame(np.arange(4.0), np.full(4, 50.0)), events=EVENTS))
    parts = summarise_run(run, RunFacts.of(run)).as_dict()
    with pytest.raises(ValidationError, match="verdikt"):
        Summary.model_validate({**parts, "verdikt": "pass"})
    with pytest.raises(ValidationError, match="verdict"):
        Summary.model_validate({**parts, "verdict": "passed"})


def test_summary_typed_sections_write_what_their_producers_said(tmp_path: Path) -> None:
    phases = [{"type": "phase", "t_s": 0.0, "name": "calm", "start_s": 0.0, "end_s": 5.0},
              {"type": "phase", "t_s": 5.0, "name": "peak", "start_s": 5.0, "end_s": 10.0}]
    frame = requests_frame(np.arange(4.0), np.full(4, 50.0), via=["job", "translate", "job", "translate"],
                           first_segment_ms=[20.0, np.nan, 30.0, np.nan], error="")
    run = load_run(write_run(tmp_path / "run", frame, events=phases + EVENTS))
    typed = summarise_run(run, RunFacts.of(run))
    assert len(typed.phases) == 2 and typed.documents is not None and typed.steady is not None
    said = {**summarise(run, RunFacts.of(run)), "live": live_section(run.events)}
    parts = typed.as_dict()
    for name in ("scenario", "generator", "phases", "documents", "steady", "live"):  # same keys, order, values
        assert json.dumps(parts[name], default=str) == json.dumps(said[name], default=str), name


def test_summary_refuses_a_misspelt_field_inside_a_section_naming_its_path(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "run", requests_frame(np.arange(4.0), np.full(4, 50.0)), events=EVENTS))
    parts = summarise_run(run, RunFacts.of(run)).as_dict()
    with pytest.raises(ValidationError, match=r"generator\.lag_sampels"):
        Summary.model_validate({**parts, "generator": {**parts["generator"], "lag_sampels": 3}})
    with pytest.raises(ValidationError, match=r"scenario\.seed"):
        Summary.model_validate({**parts, "scenario": {**parts["scenario"], "seed": "forty-two"}})
