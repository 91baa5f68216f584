"""A step that ends open (neither shown met nor missed) is stepped once more with the retry's longer
window before it counts as a failure: the verdict says when a step is open, the runner gives the
retry its rules, and `rushhour capacity` retries for 120 s unless told otherwise."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from rushhour.reports.capacity.document_model import CapacityDocument
from rushhour.reports.capacity.stepstats import SloCall
from rushhour.scenarios.capacity import runner
from rushhour.scenarios.capacity.conditions import HEALTHY
from rushhour.scenarios.capacity.document import document_of
from rushhour.scenarios.capacity.document import plain as json_ready
from rushhour.scenarios.capacity.job import RETRY_S, retry_rules_for
from rushhour.scenarios.capacity.record import verdict_of
from rushhour.scenarios.capacity.search import SearchResult, SearchSettings, StepVerdict
from rushhour.scenarios.capacity.stepper import StepRecord
from rushhour.scenarios.capacity.steps import THROUGHPUT, Assessment, Decision, StepRules
from rushhour.scenarios.capacity.target import Target
from rushhour.scenarios.cli.capacity import build_job, capacity

RULES = StepRules(measure_s=30.0, warmup_s=5.0)
RETRY = StepRules(measure_s=120.0, warmup_s=5.0)


def _call(decision: str, name: str = "p99", bad: int = 0) -> SloCall:
    return SloCall(name, "latency", "P99 <= 100 ms", decision, 900, bad, 0, 60.0, 40.0, 90.0, 314)  # type: ignore[arg-type]


def _record(index: int, rate: float, decision: Decision, calls: list[str], rules: StepRules = RULES,
            limiting: str | None = "p99", *, early: bool = False, bad: int = 0) -> StepRecord:
    named = [_call(c, name, bad if name == limiting else 0) for c, name in zip(calls, ["p99", "p50"], strict=False)]
    assessment = Assessment(decision, None if decision == "pass" else limiting, "", now_s=rules.schedule_s,
                            calls=named)
    return StepRecord(index, rate, assessment, pd.DataFrame(), pd.DataFrame(), wall_s=rules.schedule_s, early=early,
                      work_dir=Path(f"step-{index:02d}"), rules=rules)


@pytest.mark.parametrize("decision, calls, limiting, early, bad, unclear", [
    ("fail", ["open", "met"], "p99", False, 3, True),  # its final look: neither shown met nor missed
    ("fail", ["open"], "p99", True, 0, True),  # cut short: too few requests even if every one is good
    ("fail", ["open"], "p99", True, 2, False),  # cut short by the bad requests it already holds
    ("fail", ["open", "missed"], "p99", False, 0, False),
    ("fail", ["met"], THROUGHPUT, False, 0, False),
    ("pass", ["met"], None, False, 0, False),
])
def test_a_failure_no_call_showed_missed_is_open(decision: Decision, calls: list[str], limiting: str | None,
                                                 early: bool, bad: int, unclear: bool) -> None:
    record = _record(1, 50.0, decision, calls, limiting=limiting, early=early, bad=bad)
    assert verdict_of(record).open is unclear


def test_the_retry_rules_apply_only_to_the_step_after_an_open_one_at_its_rate() -> None:
    result = SearchResult(steps=[StepVerdict(40.0, "pass"), StepVerdict(80.0, "fail", "p99", open=True)])
    assert retry_rules_for(result, RETRY, 80.0) is RETRY
    assert retry_rules_for(result, RETRY, 60.0) is None
    assert retry_rules_for(result, None, 80.0) is None
    result.steps.append(StepVerdict(80.0, "fail", "p99"))
    assert retry_rules_for(result, RETRY, 80.0) is None


class _KneeService:
    """Stands in for `StepRunner`: a 30 s step passes up to 60 req/s, ends open up to 80 and shows the
    objective missed above; a window of 120 s shows it met up to 80 req/s."""

    last: _KneeService

    def __init__(self, **_kwargs: object) -> None:
        self.index = 0
        self.steps: list[tuple[float, float]] = []
        self.rules_at: Any = None

    def continues(self, _rate: float) -> bool:
        return False

    def release(self) -> None:
        return None

    def run(self, rate: float) -> StepRecord:
        self.index += 1
        rules = self.rules_at(rate) if self.rules_at is not None else RULES
        self.steps.append((rate, rules.measure_s))
        _KneeService.last = self
        if rate <= (80.0 if rules.measure_s >= RETRY.measure_s else 60.0):
            return _record(self.index, rate, "pass", ["met"], rules)
        return _record(self.index, rate, "fail", ["open" if rate <= 80.0 else "missed"], rules)


def _search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, retry: StepRules | None) -> dict[str, Any]:
    monkeypatch.setattr(runner, "StepRunner", _KneeService)
    monkeypatch.setattr(runner, "settle", lambda _url: 0.0)
    job = SimpleNamespace(known_fail=None, probe=False, mix=None, slos=[], rules=RULES, out_dir=tmp_path, seed=0,
                          protocol=None, measure_at=None, start_rps=None, require_rps=None, drift_check="ends",
                          retry_rules=retry, cost_model=None,
                          settings=SearchSettings(min_rps=20.0, max_rps=160.0, precision=0.05, retry_open=retry is not None),
                          scenario=SimpleNamespace(load=SimpleNamespace(max_lag_p99_ms=250.0)))
    return runner._search_condition(job, Target("http://127.0.0.1:9", None, "stand-in"), HEALTHY,  # type: ignore[arg-type]
                                    lambda _text: None, start_rps=None, serves_jobs=False)


def test_an_open_step_is_stepped_again_with_the_retrys_window_and_its_pass_counts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    entry = _search(monkeypatch, tmp_path, RETRY)
    steps = _KneeService.last.steps
    retried = [k for k in range(1, len(steps)) if steps[k][1] == RETRY.measure_s]
    assert retried, steps
    assert all(steps[k - 1] == (steps[k][0], RULES.measure_s) and 60.0 < steps[k][0] <= 80.0 for k in retried)
    assert 72.0 <= entry["capacity_rps"] <= 80.0, steps  # within the 5% precision of the long windows' truth
    planned = {step["index"]: step["planned_s"] for step in entry["steps"]}  # capacity.json tells a retry apart
    assert [index for index, length in sorted(planned.items()) if length == RETRY.measure_s] == [k + 1 for k in retried]


def test_without_a_retry_an_open_step_is_a_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    entry = _search(monkeypatch, tmp_path, None)
    assert all(length == RULES.measure_s for _, length in _KneeService.last.steps)
    assert entry["capacity_rps"] <= 60.0


def test_capacity_retries_open_steps_for_120_s_and_checks_the_machine_after_every_step_by_default() -> None:
    plan = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run"])
    assert plan.exit_code == 0, plan.output
    assert f"up to {RETRY_S:g} s measured" in plan.output and "after every step" in plan.output
    fast = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run", "--retry-duration", "0",
                                         "--drift-check", "ends"])
    assert "retry      none" in fast.output and "after every step" not in fast.output
    short = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run", "--retry-duration", "3s"])
    assert short.exit_code == 2 and '--retry-duration: "3s" is shorter than 5 s' in short.output


def test_capacity_json_says_how_long_the_retry_was_and_how_the_machine_was_checked(tmp_path: Path) -> None:
    job = build_job("scenarios/smoke.yaml", target_url=None, slos=(), faults="none", min_rps=None, max_rps=None,
                    precision=0.05, step_s=30.0, require_rps=None, out=tmp_path, allow_remote=False, seed=None,
                    retry_s=RETRY_S)
    assert job.settings.retry_open and job.retry_rules is not None and job.retry_rules.measure_s == RETRY_S
    document = document_of(dataclasses.replace(job, drift_check="steps"), None, [], None, 1.0)
    settings = CapacityDocument.model_validate(json_ready(document)).settings
    assert (settings.retry_duration_s, settings.drift_check) == (RETRY_S, "steps")
    plain = build_job("scenarios/smoke.yaml", target_url=None, slos=(), faults="none", min_rps=None, max_rps=None,
                      precision=0.05, step_s=30.0, require_rps=None, out=tmp_path, allow_remote=False, seed=None)
    assert not plain.settings.retry_open and plain.retry_rules is None
    assert document_of(plain, None, [], None, 1.0)["settings"]["retry_duration_s"] == 0.0
