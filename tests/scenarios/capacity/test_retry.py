"""A step that ends open (neither shown met nor missed) is stepped again with the retry's longer
window before it counts as a failure: the verdict says when a step is open and how long a window
its clustering asks for, the runner gives the retry its rules, and `rushhour capacity` retries for
120 s, longer (up to 20 min) where the open step's clustering asks for more, unless told otherwise."""

from __future__ import annotations

import dataclasses
import math
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
from rushhour.scenarios.capacity.job import (
    RETRY_MAX_S,
    RETRY_S,
    confirm_rules_for,
    opened_before,
    retry_rules_for,
    with_retry,
)
from rushhour.scenarios.capacity.record import verdict_of
from rushhour.scenarios.capacity.search import SearchResult, SearchSettings, StepVerdict
from rushhour.scenarios.capacity.stepper import StepRecord
from rushhour.scenarios.capacity.steps import THROUGHPUT, Assessment, Decision, StepRules
from rushhour.scenarios.capacity.target import Target
from rushhour.scenarios.cli.capacity import build_job, capacity

RULES = StepRules(measure_s=30.0, warmup_s=5.0)
RETRY = StepRules(measure_s=120.0, warmup_s=5.0)


def _call(decision: str, name: str = "p99", bad: int = 0, *, samples: int = 900, effect: float = 1.0) -> SloCall:
    return SloCall(name, "latency", "P99 <= 100 ms", decision, samples, bad, 0, 60.0, 40.0, 90.0, 314,  # type: ignore[arg-type]
                   design_effect=effect)


def _record(index: int, rate: float, decision: Decision, calls: list[str], rules: StepRules = RULES,
            limiting: str | None = "p99", *, early: bool = False, bad: int = 0, effect: float = 1.0) -> StepRecord:
    samples = int(rate * rules.measure_s)
    named = [_call(c, name, bad if name == limiting else 0, samples=samples, effect=effect)
             for c, name in zip(calls, ["p99", "p50"], strict=False)]
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


def test_an_open_step_says_how_long_a_window_its_clustering_asks_for() -> None:
    # 2,100 requests in 30 s counting as 1 in 12: 314 independent ones need 314 x 12 / 70 = 53.8 s
    verdict = verdict_of(_record(1, 70.0, "fail", ["open"], effect=12.0))
    assert verdict.open and verdict.evidence_s == pytest.approx(314 * 12.0 / 70.0)
    assert verdict_of(_record(2, 70.0, "fail", ["missed"], effect=12.0)).evidence_s is None  # a miss asks nothing


def test_the_retry_rules_apply_only_to_the_step_after_an_open_one_at_its_rate_with_the_window_it_offered() -> None:
    result = SearchResult(steps=[StepVerdict(40.0, "pass"), StepVerdict(80.0, "fail", "p99", open=True, retry_s=300.0)])
    assert retry_rules_for(result, RETRY, 80.0) == dataclasses.replace(RETRY, measure_s=300.0)
    assert retry_rules_for(result, RETRY, 60.0) is None
    assert retry_rules_for(result, None, 80.0) is None
    result.steps.append(StepVerdict(80.0, "fail", "p99"))
    assert retry_rules_for(result, RETRY, 80.0) is None
    result.steps.append(StepVerdict(80.0, "fail", "p99", open=True))  # open, but offered no retry
    assert retry_rules_for(result, RETRY, 80.0) is None


@pytest.mark.parametrize("evidence, ran, was_retry, max_s, offered", [
    (40.0, 30.0, False, None, RETRY_S),  # a fixed retry: once, of its own window, whatever the evidence
    (400.0, 120.0, True, None, None),
    (40.0, 30.0, False, 1200.0, RETRY_S),  # asks for 80 s: the shortest retry is 120 s
    (100.0, 30.0, False, 1200.0, 200.0),  # twice the window the evidence asks for
    (5000.0, 30.0, False, 1200.0, 1200.0),  # never past --retry-max
    (None, 30.0, False, 1200.0, RETRY_S),  # nothing measured: the shortest retry
    (400.0, 120.0, True, 1200.0, 800.0),  # a retry that ended open asking for more grows
    (50.0, 120.0, True, 1200.0, None),  # one that had what it asked for is not repeated
    (900.0, 1200.0, True, 1200.0, None),  # nor one that ran as long as allowed
])
def test_an_open_step_offers_a_retry_as_long_as_its_evidence_asks_within_the_budget(
        evidence: float | None, ran: float, was_retry: bool, max_s: float | None, offered: float | None) -> None:
    verdict = StepVerdict(80.0, "fail", "p99", open=True, evidence_s=evidence)
    assert with_retry(verdict, ran_s=ran, was_retry=was_retry, retry=RETRY, max_s=max_s).retry_s == offered
    assert with_retry(verdict, ran_s=ran, was_retry=was_retry, retry=None, max_s=max_s).retry_s is None
    shut = StepVerdict(80.0, "fail", "p99", evidence_s=evidence)  # not open: no retry
    assert with_retry(shut, ran_s=ran, was_retry=was_retry, retry=RETRY, max_s=max_s).retry_s is None
    again = with_retry(verdict, ran_s=ran, was_retry=was_retry, retry=RETRY, max_s=max_s, revisit=True).retry_s
    assert again == (offered if was_retry else None)  # a rate gets its retries once in a search


def test_a_rate_that_passed_on_a_grown_retry_is_stepped_again_on_that_retrys_window() -> None:
    result = SearchResult(steps=[StepVerdict(80.0, "fail", "p99", open=True, retry_s=600.0), StepVerdict(80.0, "pass")])
    assert confirm_rules_for(result, RETRY, 80.0, max_s=RETRY_MAX_S) == dataclasses.replace(RETRY, measure_s=600.0)
    assert confirm_rules_for(result, RETRY, 80.0, max_s=None) is None  # a fixed retry's search as it always was
    assert confirm_rules_for(result, None, 80.0, max_s=RETRY_MAX_S) is None
    assert confirm_rules_for(result, RETRY, 70.0, max_s=RETRY_MAX_S) is None
    result.steps.append(StepVerdict(80.0, "fail", "p99", "missed"))  # its last step there is no pass
    assert confirm_rules_for(result, RETRY, 80.0, max_s=RETRY_MAX_S) is None
    plain = SearchResult(steps=[StepVerdict(80.0, "pass")])  # passed without a retry
    assert confirm_rules_for(plain, RETRY, 80.0, max_s=RETRY_MAX_S) is None


def test_a_rate_that_ended_open_earlier_in_the_search_is_a_revisit() -> None:
    result = SearchResult(steps=[StepVerdict(40.0, "pass"), StepVerdict(80.0, "fail", "p99", open=True, retry_s=120.0),
                                 StepVerdict(80.0, "pass"), StepVerdict(90.0, "fail", "p99", "missed")])
    assert opened_before(result, 80.0) and not opened_before(result, 40.0) and not opened_before(result, 90.0)


class _KneeService:
    """Stands in for `StepRunner`: a 30 s step passes up to 60 req/s, ends open up to 80 and shows the
    objective missed above; a window of `needs_s` (120 s) shows it met up to 80 req/s. Its open
    steps' requests count as one in `effect`."""

    last: _KneeService
    needs_s = RETRY.measure_s
    effect = 1.0

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
        if rate <= (80.0 if rules.measure_s >= self.needs_s else 60.0):
            return _record(self.index, rate, "pass", ["met"], rules)
        return _record(self.index, rate, "fail", ["open" if rate <= 80.0 else "missed"], rules, effect=self.effect)


def _search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, retry: StepRules | None,
            retry_max_s: float | None = None, say: Any = lambda _text: None) -> dict[str, Any]:
    monkeypatch.setattr(runner, "StepRunner", _KneeService)
    monkeypatch.setattr(runner, "settle", lambda _url: 0.0)
    job = SimpleNamespace(known_fail=None, probe=False, mix=None, slos=[], rules=RULES, out_dir=tmp_path, seed=0,
                          protocol=None, measure_at=None, start_rps=None, require_rps=None, drift_check="ends",
                          retry_rules=retry, retry_max_s=retry_max_s, cost_model=None,
                          settings=SearchSettings(min_rps=20.0, max_rps=160.0, precision=0.05, retry_open=retry is not None),
                          scenario=SimpleNamespace(load=SimpleNamespace(max_lag_p99_ms=250.0)))
    return runner._search_condition(job, Target("http://127.0.0.1:9", None, "stand-in"), HEALTHY,  # type: ignore[arg-type]
                                    say, start_rps=None, serves_jobs=False)


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
    # its lowest failure is the confirmation at 80 req/s, a fresh 30 s step that ended open and gets no
    # second retry there; it held the independent requests a pass needs, so it is near the allowance
    undecided = entry["undecided_fail"]
    assert undecided["rate_rps"] == entry["bracket"][1] == 80.0, steps
    assert "sits near the allowance" in undecided["sentence"] and undecided["sentence"] in entry["summary"]


def test_a_clustered_open_step_is_retried_for_as_long_as_its_clustering_asks(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # open steps count one request in 60: at 70 req/s, 314 independent ones take 269 s, so the
    # retry plans 538 s, past the 400 s this service needs; a fixed 120 s retry never gets there
    monkeypatch.setattr(_KneeService, "needs_s", 400.0)
    monkeypatch.setattr(_KneeService, "effect", 60.0)
    said: list[str] = []
    entry = _search(monkeypatch, tmp_path, RETRY, retry_max_s=RETRY_MAX_S, say=said.append)
    steps = _KneeService.last.steps
    grown = [(rate, length) for rate, length in steps if length > RETRY.measure_s]
    assert grown and all(length == math.ceil(2 * 314 * 60.0 / rate) for rate, length in grown), steps
    assert 72.0 <= entry["capacity_rps"] <= 80.0, steps
    assert any("clustering asks for about" in line for line in said), said
    # the figure's confirmation is judged on as long a window as the retry that passed there
    at_figure = [length for rate, length in steps if rate == entry["capacity_rps"]]
    assert at_figure[0] == RULES.measure_s and at_figure[1:] == [at_figure[1]] * len(at_figure[1:]), steps
    assert len(at_figure) >= 3 and entry["confirmed"] is True, steps

    fixed = _search(monkeypatch, tmp_path / "fixed", RETRY)
    assert fixed["capacity_rps"] <= 60.0  # 120 s never decides it: the rate counts as a failure


def test_a_retry_capped_by_the_budget_leaves_the_failure_undecided_and_says_so(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_KneeService, "needs_s", 400.0)
    monkeypatch.setattr(_KneeService, "effect", 60.0)
    said: list[str] = []
    entry = _search(monkeypatch, tmp_path, RETRY, retry_max_s=300.0, say=said.append)
    steps = _KneeService.last.steps
    assert max(length for _, length in steps) == 300.0 and entry["capacity_rps"] <= 60.0, steps
    assert sum(1 for rate, _ in steps if rate == entry["bracket"][1]) == 2  # one retry: a second would not grow
    assert any("the longest --retry-max allows" in line for line in said), said
    undecided = entry["undecided_fail"]
    assert undecided["rate_rps"] == pytest.approx(entry["bracket"][1], abs=1e-3)
    assert "may lie above it too" in undecided["sentence"] and undecided["sentence"] in entry["summary"]
    assert undecided["evidence_s"] == pytest.approx(314 * 60.0 / entry["bracket"][1], abs=0.1)


def test_without_a_retry_an_open_step_is_a_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    entry = _search(monkeypatch, tmp_path, None)
    assert all(length == RULES.measure_s for _, length in _KneeService.last.steps)
    assert entry["capacity_rps"] <= 60.0


def test_capacity_retries_open_steps_for_120_s_to_20_min_and_checks_the_machine_after_every_step_by_default() -> None:
    plan = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run"])
    assert plan.exit_code == 0, plan.output
    assert f"{RETRY_S:g} s to {RETRY_MAX_S:g} s measured" in plan.output and "after every step" in plan.output
    fixed = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run", "--retry-max", "120s"])
    assert fixed.exit_code == 0 and f"once more, 5 s warm-up + up to {RETRY_S:g} s measured" in fixed.output
    under = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run", "--retry-max", "60s"])
    assert under.exit_code == 2 and '--retry-max: "60s" is shorter than --retry-duration (120 s)' in under.output
    bad = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run", "--retry-max", "soon"])
    assert bad.exit_code == 2 and "--retry-max" in bad.output
    fast = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run", "--retry-duration", "0",
                                         "--drift-check", "ends"])
    assert "retry      none" in fast.output and "after every step" not in fast.output
    short = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--dry-run", "--retry-duration", "3s"])
    assert short.exit_code == 2 and '--retry-duration: "3s" is shorter than 5 s' in short.output


def test_capacity_json_says_how_long_the_retry_was_and_how_the_machine_was_checked(tmp_path: Path) -> None:
    job = build_job("scenarios/smoke.yaml", target_url=None, slos=(), faults="none", min_rps=None, max_rps=None,
                    precision=0.05, step_s=30.0, require_rps=None, out=tmp_path, allow_remote=False, seed=None,
                    retry_s=RETRY_S, retry_max_s=RETRY_MAX_S)
    assert job.settings.retry_open and job.retry_rules is not None and job.retry_rules.measure_s == RETRY_S
    document = document_of(dataclasses.replace(job, drift_check="steps"), None, [], None, 1.0)
    settings = CapacityDocument.model_validate(json_ready(document)).settings
    assert (settings.retry_duration_s, settings.retry_max_s, settings.drift_check) == (RETRY_S, RETRY_MAX_S, "steps")
    plain = build_job("scenarios/smoke.yaml", target_url=None, slos=(), faults="none", min_rps=None, max_rps=None,
                      precision=0.05, step_s=30.0, require_rps=None, out=tmp_path, allow_remote=False, seed=None)
    assert not plain.settings.retry_open and plain.retry_rules is None
    assert {key: document_of(plain, None, [], None, 1.0)["settings"][key] for key in ("retry_duration_s", "retry_max_s")} \
        == {"retry_duration_s": 0.0, "retry_max_s": 0.0}

