"""summary.json has one typed definition: what a run's summary holds is validated as it is built."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from rushhour.reports.build import build_reports, story, summarise_run
from rushhour.reports.gate.baselines import load_baselines
from rushhour.reports.gate.compare import compare_loaded
from rushhour.reports.measures.facts import RunFacts
from rushhour.reports.measures.live import live_section
from rushhour.reports.rundata.results import RunData, load_run
from rushhour.reports.summary.aggregate import summarise
from rushhour.reports.summary.model import Summary
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
    for name in ("scenario", "generator", "phases", "documents", "steady", "live", "latency_detail"):  # same keys, order, values
        assert json.dumps(parts[name], default=str) == json.dumps(said[name], default=str), name


def test_summary_refuses_a_misspelt_field_inside_a_section_naming_its_path(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "run", requests_frame(np.arange(4.0), np.full(4, 50.0)), events=EVENTS))
    parts = summarise_run(run, RunFacts.of(run)).as_dict()
    with pytest.raises(ValidationError, match=r"generator\.lag_sampels"):
        Summary.model_validate({**parts, "generator": {**parts["generator"], "lag_sampels": 3}})
    with pytest.raises(ValidationError, match=r"scenario\.seed"):
        Summary.model_validate({**parts, "scenario": {**parts["scenario"], "seed": "forty-two"}})
    detail = parts["latency_detail"]
    with pytest.raises(ValidationError, match=r"latency_detail\.corrected\.p99\.sampels"):
        wrong = {**detail["corrected"], "p99": {**detail["corrected"]["p99"], "sampels": 4}}
        Summary.model_validate({**parts, "latency_detail": {**detail, "corrected": wrong}})
    with pytest.raises(ValidationError, match=r"findings\.0\.txet"):
        Summary.model_validate({**parts, "findings": [{**parts["findings"][0], "txet": "x"}, *parts["findings"][1:]]})


PHASES = [{"type": "phase", "t_s": 0.0, "name": "calm", "start_s": 0.0, "end_s": 5.0},
          {"type": "phase", "t_s": 5.0, "name": "peak", "start_s": 5.0, "end_s": 10.0}]
EVERY_KIND = [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 80, "steady_only": True},
              {"name": "up", "kind": "availability", "objective": 0.9},
              {"name": "lite", "kind": "degraded", "max_share": 0.5},
              {"name": "good", "kind": "goodput", "min_rps": 0.5},
              {"name": "creep", "kind": "drift", "metric": "latency_p99", "max_slope": 100.0}]
JOURNAL = {"status": "completed", "deviated": False, "steady_states": {"before": {"steady_state_met": True},
                                                                        "after": {"steady_state_met": False}}}


def _every_kind_run(tmp_path: Path) -> RunData:
    """A run in two phases judged on one SLO of each row shape, with a fault whose chaos journal is on disk."""
    frame = requests_frame(np.arange(40.0) / 4, 40.0 + np.arange(40.0), ok=np.arange(40) % 9 != 0)
    root = write_run(tmp_path / "run", frame, scenario={"slos": EVERY_KIND}, events=PHASES + EVENTS)
    (root / "chaos").mkdir()
    (root / "chaos" / "kill.journal.json").write_text(json.dumps(JOURNAL))
    return load_run(root)


def test_summary_slo_and_fault_rows_write_what_their_producers_said(tmp_path: Path) -> None:
    run = _every_kind_run(tmp_path)
    typed = summarise_run(run, RunFacts.of(run))
    assert [type(row).__name__ for row in typed.slos] == ["LatencySloRow", "ShareSloRow", "ShareSloRow",
                                                          "GoodputSloRow", "DriftSloRow"]
    assert typed.faults[0].steady_state is not None and typed.faults[0].steady_state.after_met is False
    sections = summarise(run, RunFacts.of(run))
    told = story(run, sections, RunFacts.of(run))
    said = {"slos": sections["slos"], "faults": told["faults"], "findings": told["findings"]}
    assert said["slos"][0]["whole_run"] and len(said["faults"][0]["periods"]) == 3
    assert [len(row["phases"]) for row in said["slos"]] == [2, 2, 2, 2, 0]  # every kind's phase rows are checked
    assert {f["rule"] for f in said["findings"]} >= {"slo", "recovery"}
    parts = typed.as_dict()
    for name in ("slos", "faults", "findings"):  # same keys, order, values
        assert json.dumps(parts[name], default=str) == json.dumps(said[name], default=str), name


def test_summary_refuses_a_misspelt_slo_or_fault_field_naming_its_path(tmp_path: Path) -> None:
    parts = summarise_run(run := _every_kind_run(tmp_path), RunFacts.of(run)).as_dict()
    slos, faults = parts["slos"], parts["faults"]
    with pytest.raises(ValidationError, match=r"slos\.1\.availability\.mett"):
        Summary.model_validate({**parts, "slos": [slos[0], {**slos[1], "mett": True}, *slos[2:]]})
    with pytest.raises(ValidationError, match=r"slos\.0\.latency\.samples"):
        Summary.model_validate({**parts, "slos": [{**slos[0], "samples": "many"}, *slos[1:]]})
    with pytest.raises(ValidationError, match=r"slos\.3\.goodput\.phases\.1\.rps"):
        goodput = {**slos[3], "phases": [slos[3]["phases"][0], {**slos[3]["phases"][1], "rps": 1.0}]}
        Summary.model_validate({**parts, "slos": [*slos[:3], goodput, slos[4]]})
    with pytest.raises(ValidationError, match=r"slos\.0\.latency\.whole_run\.mesured"):
        Summary.model_validate({**parts, "slos": [{**slos[0], "whole_run": {**slos[0]["whole_run"], "mesured": 1.0}},
                                                  *slos[1:]]})
    with pytest.raises(ValidationError, match=r"faults\.0\.periods\.2\.overlap"):
        periods = faults[0]["periods"]
        Summary.model_validate({**parts, "faults": [{**faults[0], "periods": [*periods[:2], {**periods[2], "overlap": []}]}]})
    with pytest.raises(ValidationError, match=r"faults\.0\.recoverd"):
        Summary.model_validate({**parts, "faults": [{**faults[0], "recoverd": True}]})
    burning = next(i for i, slo in enumerate(slos) if slo.get("burn_rates"))
    rows = slos[burning]["burn_rates"]
    with pytest.raises(ValidationError, match=rf"slos\.{burning}\.\w+\.burn_rates\.0\.pagess"):
        Summary.model_validate({**parts, "slos": [*slos[:burning], {**slos[burning], "burn_rates": [
            {**rows[0], "pagess": True}, *rows[1:]]}, *slos[burning + 1:]]})


PRICES = {"source": "fixture prices", "date": "2026-11", "managed_api_usd_per_1k_chars": 0.02,
          "pools": {"quality": {"usd_per_node_hour": 3.6, "kind": "gpu"}, "fast": {"usd_per_node_hour": 0.36}}}


def _priced_run(tmp_path: Path, *, prices: bool, scrapes: bool) -> RunData:
    """A run with or without a price list and node counts; output tokens known, input tokens not."""
    t = np.arange(-1.0, 12.0)
    metrics = pd.concat([pd.DataFrame({"t_s": t, "pool": "quality", "nodes_alive": 2}),
                         pd.DataFrame({"t_s": t, "pool": "fast", "nodes_alive": 1})])
    frame = requests_frame(np.arange(20.0) / 2, np.full(20, 50.0), model=np.where(np.arange(20) % 3, "quality", "fast"),
                           priority=np.where(np.arange(20) % 2, "paid", "free"), cached=np.arange(20) % 4 == 0,
                           output_tokens=10.0 + np.arange(20.0), input_tokens=-1.0)
    scenario = {"cost": PRICES} if prices else {}
    return load_run(write_run(tmp_path / "run", frame, scenario=scenario, events=EVENTS,
                              metrics=metrics if scrapes else None))


@pytest.mark.parametrize(("prices", "scrapes"), [(True, True), (True, False), (False, True)])
def test_summary_cost_writes_what_its_producers_said(tmp_path: Path, prices: bool, scrapes: bool) -> None:
    run = _priced_run(tmp_path, prices=prices, scrapes=scrapes)
    typed = summarise_run(run, RunFacts.of(run))
    said = summarise(run, RunFacts.of(run))["cost"]
    assert typed.cost is not None and typed.cost.known is (prices and scrapes)
    if typed.cost.known:  # every part of the known shape is there: pools, classes, faults, both token directions
        assert said["by_pool"] and said["by_priority"] and said["during_faults"]["chars"] > 0
        assert said["tokens"]["output"]["by_phase"] and said["tokens"]["input"]["known"] is False
    assert json.dumps(typed.as_dict()["cost"], default=str) == json.dumps(said, default=str)


def test_summary_refuses_a_misspelt_cost_field_naming_its_path(tmp_path: Path) -> None:
    parts = summarise_run(run := _priced_run(tmp_path, prices=True, scrapes=True), RunFacts.of(run)).as_dict()
    cost = parts["cost"]
    with pytest.raises(ValidationError, match=r"cost\.by_pool\.0\.usdd"):
        Summary.model_validate({**parts, "cost": {**cost, "by_pool": [{**cost["by_pool"][0], "usdd": 1.0}]}})
    output = cost["tokens"]["output"]
    with pytest.raises(ValidationError, match=r"cost\.tokens\.output\.by_phase\.0\.class"):
        wrong = {**output, "by_phase": [{**output["by_phase"][0], "class": 3}]}
        Summary.model_validate({**parts, "cost": {**cost, "tokens": {**cost["tokens"], "output": wrong}}})


def test_summary_steady_windows_refuse_a_misspelt_field() -> None:
    from pydantic import TypeAdapter

    from rushhour.reports.measures.steady import SteadyWindow

    window = {"phase": "peak", "start_s": 0.0, "end_s": 60.0, "steady_start_s": 5.0, "warmup_s": 5.0, "reason": None}
    assert TypeAdapter(SteadyWindow).validate_python(window) == SteadyWindow("peak", 0.0, 60.0, 5.0, 5.0, None)
    with pytest.raises(ValidationError, match=r"warmpu_s"):
        TypeAdapter(SteadyWindow).validate_python({**window, "warmpu_s": 1.0})


def test_summary_comparison_is_the_gates_own_record_and_refuses_a_misspelt_field(tmp_path: Path) -> None:
    times = np.linspace(0, 20, 400)
    base = write_run(tmp_path / "b", requests_frame(times, np.full(400, 100.0)))
    failed = np.arange(400) % 20 == 0  # failures count as infinitely slow: the current P99 is infinite
    run = load_run(write_run(tmp_path / "c", requests_frame(times, np.where(failed, 3_000.0, 100.0), ok=~failed)))
    typed = summarise_run(run, RunFacts.of(run), baseline=base)
    said = compare_loaded(load_baselines(base), run).as_dict()
    assert typed.comparison is not None and typed.comparison.decision.groups[0].p_current_ms == np.inf
    parts = typed.as_dict()
    assert json.dumps(parts["comparison"]) == json.dumps(said)  # same keys, order, values
    groups = parts["comparison"]["decision"]["groups"]
    with pytest.raises(ValidationError, match=r"comparison\.decision\.groups\.0\.ratioo"):
        decision = {**parts["comparison"]["decision"], "groups": [{**groups[0], "ratioo": 1.0}]}
        Summary.model_validate({**parts, "comparison": {**parts["comparison"], "decision": decision}})
