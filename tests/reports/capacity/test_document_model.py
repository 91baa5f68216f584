"""capacity.json's model against documents the capacity code writes: steps and conditions from
stand-in step records, the top level from a real (refused) capacity run."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from rushhour.reports.capacity.document_model import CapacityDocument, read_capacity
from rushhour.reports.capacity.stepstats import judge_slos, step_figures
from rushhour.reports.schema import SloSpec
from rushhour.scenarios.capacity.document import plain
from rushhour.scenarios.capacity.record import condition_entry, step_entry
from rushhour.scenarios.capacity.search import SearchResult
from rushhour.scenarios.capacity.stepper import StepRecord
from rushhour.scenarios.capacity.steps import Assessment, StepRules
from rushhour.scenarios.cli.capacity import capacity
from tests.support.targets import serve_target

P99 = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=500)


def _step(tmp_path: Path, index: int, rate: float, latency_ms: float) -> dict[str, Any]:
    """A 20 s step at `rate` whose every answer takes `latency_ms`, judged and recorded as a search does."""
    intended = np.arange(int(rate * 20)) / rate
    done = intended + latency_ms / 1000.0
    requests = pd.DataFrame({"intended_s": intended, "sent_s": intended, "done_s": done,
                             "latency_ms": (done - intended) * 1000.0, "ok": True, "status": 200, "degraded": False,
                             "priority": "paid", "mode": "auto", "kind": "short", "phase": ""})
    calls = judge_slos(requests, [P99], 21.0)
    passed = calls[0].decision == "met"
    assessment = Assessment("pass" if passed else "fail", None if passed else "p99", "stand-in", now_s=21.0,
                            calls=calls, figures=step_figures(requests, window=(0.0, 20.0), completions=done, specs=[P99]))
    rules = StepRules(measure_s=20.0, warmup_s=0.0)
    record = StepRecord(index, rate, assessment, requests, pd.DataFrame(), wall_s=21.0, early=False,
                        work_dir=tmp_path / f"step-{index:02d}", rules=rules)
    return step_entry(record, rules=rules, slots_per_node={}, cost_model=None)


def _refused_run(tmp_path: Path) -> Path:
    """capacity.json of a run refused at the protocol probe, written by the capacity command itself."""
    with serve_target() as (url, _):
        data = {"name": "own", "traffic": {"model": "constant:1", "duration": "60s"},
                "target": {"url": url, "protocol": "http", "http": {"path": "/nowhere"}},
                "slos": [{"name": "p95", "kind": "latency", "percentile": 95, "threshold_ms": 500}]}
        (tmp_path / "own.yaml").write_text(yaml.safe_dump(data))
        result = CliRunner().invoke(capacity, [str(tmp_path / "own.yaml"), "--min-rps", "5", "--step-duration", "15s",
                                               "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    return tmp_path / "out" / "capacity.json"


@pytest.fixture
def document(tmp_path: Path) -> dict[str, Any]:
    """The refused run's document with one searched condition (a fast and a slow step) put in."""
    written = json.loads(_refused_run(tmp_path).read_text())
    steps = [_step(tmp_path, 1, 50.0, 100.0), _step(tmp_path, 2, 100.0, 900.0)]
    result = SearchResult(last_pass=50.0, first_fail=100.0, limiting="p99", confirmed=None)
    condition = condition_entry("none", result, steps, require_rps=None, wall_s=42.0) | {"interrupted": False}
    return plain(written | {"conditions": [condition], "steps": condition["steps"], "capacity_rps": 50.0})


def test_capacity_document_of_a_refused_run_reads_back(tmp_path: Path) -> None:
    model = read_capacity(_refused_run(tmp_path))
    assert model.aborted is not None and "does not fit its protocol" in model.aborted
    assert model.steps == [] and model.conditions == [] and model.slos[0].name == "p95"


def test_capacity_document_with_steps_validates_with_their_evidence(document: dict[str, Any]) -> None:
    model = CapacityDocument.model_validate(document)
    fast, slow = model.conditions[0].steps
    assert (fast.verdict, slow.verdict, slow.limiting) == ("pass", "fail", "p99")
    assert fast.slos[0].decision == "met" and slow.slos[0].decision == "missed"
    assert fast.slos[0].effective_samples == int(fast.slos[0].samples / fast.slos[0].design_effect) > 0
    assert fast.latency_ms["p99"].value == pytest.approx(100.0) and slow.latency_ms["p50"].value == pytest.approx(900.0)
    assert model.conditions[0].at_capacity is not None and model.conditions[0].at_capacity.step == 1
    assert model.conditions[0].bracket == [50.0, 100.0] and "exact binomial" in fast.slos[0].method


def test_capacity_document_takes_added_step_statistics(document: dict[str, Any]) -> None:
    document["conditions"][0]["steps"][0]["drift_share"] = 0.1
    assert CapacityDocument.model_validate(document).conditions[0].steps[0].model_extra == {"drift_share": 0.1}


@pytest.mark.parametrize(("where", "value", "named"), [
    (("conditions", 0, "steps", 1, "verdict"), "maybe", "conditions.0.steps.1.verdict"),
    (("conditions", 0, "steps", 0, "slos", 0, "effective_samples"), "many", "conditions.0.steps.0.slos.0.effective_samples"),
    (("conditions", 0, "capacity_rps"), "fast", "conditions.0.capacity_rps"),
    (("settings", "min_rps"), None, "settings.min_rps"),
])
def test_capacity_document_refuses_a_malformed_field_by_name(document: dict[str, Any], where: tuple[Any, ...],
                                                             value: object, named: str) -> None:
    broken = copy.deepcopy(document)
    part = broken
    for key in where[:-1]:
        part = part[key]
    part[where[-1]] = value
    with pytest.raises(ValidationError, match=named.replace(".", r"\.")):
        CapacityDocument.model_validate(broken)
