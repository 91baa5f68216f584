"""summary.json's calibration and harness-overhead sections are typed: what the scenarios code writes
(a calibration kept in the resolved scenario, the `harness_overhead` event of a check read from its
cache or of a check that failed) reaches the summary unchanged (keys, order, values) and reads back
the same, and a misspelt field or a value of the wrong type is refused naming its path."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import ValidationError

from rushhour.reports.build import summarise_run
from rushhour.reports.measures.facts import RunFacts
from rushhour.reports.rundata.results import RunData, load_run
from rushhour.reports.summary.aggregate import summarise
from rushhour.reports.summary.model import Summary
from rushhour.reports.summary.scenario_section import OverheadMeasured, OverheadUnmeasured
from rushhour.scenarios.run import overhead
from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.spec.model import load_scenario, resolved_dict
from rushhour.scenarios.spec.peak import Calibration
from rushhour.scenarios.spec.plan import with_calibration
from tests.reports.helpers import requests_frame, write_run

LIMIT_MS = 50.0
SLOS = [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 20}]


def _rungs() -> list[dict[str, Any]]:
    """The ladder as `judge_steps` judges it: every rung on time and answered, the top one behind."""
    rows, steps = [], []
    for index, rate in enumerate(overhead.LADDER_RPS):
        count = int(rate * overhead.STEP_S)
        intended = index + np.linspace(0.0, 1.0, count, endpoint=False)
        late = 0.2 if index == len(overhead.LADDER_RPS) - 1 else 0.0
        rows.append(pd.DataFrame({"intended_s": intended, "sent_s": intended + late, "ok": True,
                                  "latency_ms": np.linspace(1.0, 9.0, count) + late * 1000.0}))
        steps.append(np.full(count, index))
    return overhead.judge_steps(pd.concat(rows, ignore_index=True), np.concatenate(steps), LIMIT_MS)


def _cached_event() -> dict[str, Any]:
    """The `harness_overhead` event of a run at 120 req/s whose check was read from the cache."""
    key, parts = overhead.overhead_key("rushhour", False)
    record = {"steps": _rungs(), "max_valid_rps_per_process": 2000.0, "lag_limit_ms": LIMIT_MS, "key": key,
              "made_of": parts, "measured_at": datetime.now(UTC).isoformat(timespec="seconds")}
    overhead.cache_dir().mkdir(parents=True, exist_ok=True)
    (overhead.cache_dir() / f"{key}.json").write_text(json.dumps(record))
    return overhead.run_overhead_check(pd.DataFrame(), peak_rps=120.0, target=None, lag_limit_ms=LIMIT_MS,
                                       languages=("en-de",), say=lambda _line: None)


SMOKE = Path(__file__).resolve().parents[3] / "scenarios" / "smoke.yaml"
CALIBRATION = Calibration(factor=0.6, condition="n-1", capacity_rps=101.3, peak_rps=60.78, note="cached", key="k1",
                          measured_at="2026-12-01T08:00:00+00:00", load_then=1.2, load_now=3.4, check="held")


def _resolved_calibration() -> dict[str, Any]:
    """The calibration as a drill's results folder keeps it: in the resolved scenario's traffic block."""
    scenario = with_calibration(load_scenario(SMOKE), CALIBRATION, source=str(SMOKE))
    traffic = resolved_dict(scenario, rate_scale=1.0)["traffic"]
    assert isinstance(traffic, dict)
    return dict(traffic["calibration"])


def _run(tmp_path: Path, overhead_event: dict[str, Any], calibration: dict[str, Any] | None) -> RunData:
    """A run with the calibration given and the overhead event as the drill writes it."""
    traffic: dict[str, Any] = {"model": "flat", "time_scale": 1.0, "rate_scale": 1.0, "start_clock_s": 0.0,
                               "duration_s": 10.0, "calibration": calibration}
    root = write_run(tmp_path / "run", requests_frame(np.arange(10.0), np.full(10, 30.0)),
                     scenario={"traffic": traffic, "slos": SLOS})
    written = yaml.safe_load((root / "scenario.yaml").read_text())  # in the drill's order, as dump_scenario writes
    (root / "scenario.yaml").write_text(yaml.safe_dump(written | {"traffic": traffic}, sort_keys=False))
    log = EventLog(root / "events.jsonl", origin=0.0)
    log.emit("harness_overhead", t_s=0.0, source="harness", **overhead_event)
    log.emit("run_end", t_s=10.0, duration_s=10.0)
    log.close()
    return load_run(root)


def _parts(tmp_path: Path) -> dict[str, Any]:
    run = _run(tmp_path, _cached_event(), _resolved_calibration())
    return summarise_run(run, RunFacts.of(run)).as_dict()


def test_calibration_and_measured_overhead_reach_the_summary_unchanged_and_read_back_the_same(tmp_path: Path) -> None:
    kept = _resolved_calibration()
    run = _run(tmp_path, _cached_event(), kept)
    typed = summarise_run(run, RunFacts.of(run))
    parts, said = typed.as_dict(), summarise(run, RunFacts.of(run))
    assert isinstance(typed.harness_overhead, OverheadMeasured)
    assert json.dumps(parts["scenario"]["calibration"]) == json.dumps(said["scenario"]["calibration"])
    assert parts["scenario"]["calibration"] == {**CALIBRATION.model_dump(), "text": said["scenario"]["calibration"]["text"]}
    section = parts["harness_overhead"]
    assert section["cached"] is True and section["at_rps"] == 200.0 and section["steps"] == _rungs()
    assert section["steps"][-1]["valid"] is False and section["steps"][-1]["reasons"]
    assert [row["name"] for row in section["tight_slos"]] == ["p99"]  # 20 ms < 3 x the harness's own P99
    text = json.dumps(parts)
    assert json.dumps(Summary.model_validate(json.loads(text)).as_dict()) == text


def test_a_failed_check_and_a_calibration_written_by_hand_keep_their_own_shapes(tmp_path: Path) -> None:
    partial = {"factor": 0.5, "condition": "none", "capacity_rps": 80.0, "peak_rps": 40.0}
    run = _run(tmp_path, {"error": "the null target did not start"}, partial)
    typed = summarise_run(run, RunFacts.of(run))
    parts = typed.as_dict()
    assert isinstance(typed.harness_overhead, OverheadUnmeasured)
    assert parts["harness_overhead"] == {"measured": False, "error": "the null target did not start", "tight_slos": []}
    assert list(parts["scenario"]["calibration"]) == [*partial, "text"]  # the fields left out stay out
    text = json.dumps(parts)
    assert json.dumps(Summary.model_validate(json.loads(text)).as_dict()) == text


@pytest.mark.parametrize(("change", "path"), [
    (lambda p: {**p, "scenario": {**p["scenario"], "calibration": {**p["scenario"]["calibration"], "factr": 1}}},
     r"scenario\.calibration\.factr"),
    (lambda p: {**p, "scenario": {**p["scenario"], "calibration": {**p["scenario"]["calibration"], "condition": "n-2"}}},
     r"scenario\.calibration\.condition"),
    (lambda p: {**p, "harness_overhead": {**p["harness_overhead"], "cachd": True}}, r"harness_overhead\.measured\.cachd"),
    (lambda p: {**p, "harness_overhead": {**p["harness_overhead"], "latency_ms": {"p50": 1.0, "p99": "fast",
                                                                                  "p99_9": 2.0}}},
     r"harness_overhead\.measured\.latency_ms\.p99"),
    (lambda p: {**p, "harness_overhead": {**p["harness_overhead"],
                                          "steps": [{**p["harness_overhead"]["steps"][0], "valdi": True}]}},
     r"harness_overhead\.measured\.steps\.0\.valdi"),
    (lambda p: {**p, "harness_overhead": {**p["harness_overhead"],
                                          "tight_slos": [{**p["harness_overhead"]["tight_slos"][0], "ratio": "low"}]}},
     r"harness_overhead\.measured\.tight_slos\.0\.ratio"),
    (lambda p: {**p, "harness_overhead": {"measured": False, "error": None, "tight_slos": []}},
     r"harness_overhead\.unmeasured\.error"),
], ids=["calibration-misspelt", "calibration-condition", "overhead-misspelt", "overhead-quantile", "overhead-step",
        "overhead-tight-slo", "overhead-unmeasured"])
def test_a_misspelt_or_mistyped_field_is_refused_naming_its_path(tmp_path: Path, change: Any, path: str) -> None:
    parts = _parts(tmp_path)
    with pytest.raises(ValidationError, match=path):
        Summary.model_validate(change(parts))
