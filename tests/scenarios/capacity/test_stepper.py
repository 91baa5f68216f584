"""A step's watch loop against a fake load session: when a generator that has finished counts as
one that stopped early; and, against a real queue, a step that goes on with a pass's load."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest
import yaml

from rushhour.reports.schema import SloSpec
from rushhour.scenarios.capacity.job import load_mix, step_rules
from rushhour.scenarios.capacity.stepper import StepRunner
from rushhour.scenarios.capacity.steps import StepRules, look_times
from rushhour.scenarios.spec.model import load_scenario
from tests.support.mdc import serve_mdc

P99 = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=500)
RULES = StepRules(measure_s=1.0, warmup_s=0.5, tail_s=1.0, record_lag_s=0.0)


class _SpentSession:
    """A generator that has already fired its whole schedule and recorded every answer."""

    settings = SimpleNamespace(jobs_in_use=False)

    def __init__(self, offsets: np.ndarray) -> None:
        self._parts = pd.DataFrame({
            "row": np.arange(offsets.size), "intended_s": offsets, "sent_s": offsets, "done_s": offsets + 0.05,
            "pool_wait_ms": 0.0, "status": 200, "error": "", "model": "", "cached": False, "degraded": False,
            "node": "", "first_segment_s": np.nan, "via": "translate"})
        self._given = False

    def poll(self) -> pd.DataFrame:
        parts, self._given = (self._parts.iloc[:0] if self._given else self._parts), True
        return parts

    def cpu_percent(self) -> float:
        return 0.0

    def finished(self) -> bool:
        return True


def _watch(offsets: list[float]) -> Any:
    schedule = pd.DataFrame({"offset_s": offsets, "kind": "short", "chars": 10, "priority": "paid", "mode": "auto",
                             "text_id": 1, "tenant": "t", "phase": "", "deadline_ms": 2000})
    runner = cast(StepRunner, SimpleNamespace(rules=RULES, specs=[P99]))
    session = _SpentSession(np.asarray(offsets, dtype=float))
    return StepRunner._watch(runner, cast(Any, session), schedule, [], time.time())


@pytest.mark.slow
def test_stepper_a_generator_done_before_its_last_request_was_due_stopped_early() -> None:
    verdict = _watch([0.1, 0.6, 1.2])  # finished at the first poll (0.5 s), a request due at 1.2 s
    assert verdict.decision == "invalid" and "stopped before the step's end" in verdict.reason


@pytest.mark.slow
def test_stepper_a_generator_whose_schedule_is_spent_is_judged_at_the_step_end() -> None:
    verdict = _watch([0.1, 0.2, 0.3])  # every request was due before the first poll
    assert verdict.now_s >= RULES.schedule_s
    assert verdict.decision == "fail" and verdict.limiting == "p99" and "not shown met" in verdict.reason


class _OpenSession(_SpentSession):
    """A generator still running: every answer recorded except those of `unanswered` rows."""

    def __init__(self, offsets: np.ndarray, *, status: int = 200, unanswered: tuple[int, ...] = (),
                 failed: tuple[int, ...] = ()) -> None:
        super().__init__(offsets)
        self._parts["status"] = status
        self._parts.loc[list(failed), "status"] = 500
        self._parts = self._parts.drop(index=list(unanswered))

    def finished(self) -> bool:
        return False


def _watch_open(rules: StepRules, spec: SloSpec, offsets: np.ndarray, **session: Any) -> Any:
    schedule = pd.DataFrame({"offset_s": offsets, "kind": "short", "chars": 10, "priority": "paid", "mode": "auto",
                             "text_id": 1, "tenant": "t", "phase": "", "deadline_ms": 2000})
    runner = cast(StepRunner, SimpleNamespace(rules=rules, specs=[spec]))
    return StepRunner._watch(runner, cast(Any, _OpenSession(offsets, **session)), schedule, [], time.time())


@pytest.mark.slow
def test_stepper_an_interim_look_whose_requests_are_all_answered_is_taken_before_its_planned_time() -> None:
    """Every request failed and was recorded at once: the first look's data are final as soon as
    its quarter of the window is due, so it calls the SLO missed then, not 5 s later. (A median
    objective: a pass stays possible until half the window has failed, so the look, not the
    curtailing, ends the step.)"""
    rules = StepRules(measure_s=4.0, warmup_s=0.5, tail_s=5.0, record_lag_s=0.0)
    spec = SloSpec(name="p50", kind="latency", percentile=50, threshold_ms=5000)
    planned = look_times(rules, [spec])[0]
    verdict = _watch_open(rules, spec, np.linspace(0.0, 4.4, 300), status=500)
    assert verdict.decision == "fail" and verdict.limiting == "p50" and "missed" in verdict.reason
    assert verdict.calls[0].look == 1 and verdict.now_s < planned - 2.0, (verdict.now_s, planned)


@pytest.mark.slow
def test_stepper_a_pass_that_holds_with_its_pending_requests_counted_bad_ends_the_step() -> None:
    """One request of the window never answers; the other 299 were all fast, so the P95 is met
    even with that one bad, and the step passes at its end instead of waiting out its tail."""
    rules = StepRules(measure_s=1.0, warmup_s=0.5, tail_s=20.0, record_lag_s=0.0)
    spec = SloSpec(name="p95", kind="latency", percentile=95, threshold_ms=5000)
    verdict = _watch_open(rules, spec, np.linspace(0.5, 1.49, 300), unanswered=(150,))
    assert verdict.decision == "pass" and verdict.calls[0].pending == 1, verdict
    assert verdict.now_s < rules.deadline_s - 10.0, verdict.now_s


@pytest.mark.slow
def test_stepper_a_step_that_can_no_longer_pass_ends_at_the_next_check() -> None:
    """Three failures early in a 700-request window: the final look could not show the P99 met
    even with every later request good, so the step ends at the next check for it (every 2 s)
    instead of at its first look."""
    rules = StepRules(measure_s=16.0, warmup_s=0.5, tail_s=5.0, record_lag_s=0.0)
    offsets = np.linspace(0.0, 16.4, 700)
    early = tuple(int(i) for i in np.flatnonzero((offsets > 0.5) & (offsets < 0.9))[:3])
    verdict = _watch_open(rules, P99, offsets, failed=early)
    assert verdict.decision == "fail" and verdict.limiting == "p99" and "no longer" in verdict.reason, verdict
    assert verdict.now_s < rules.look_end(1), verdict.now_s


@pytest.mark.slow
def test_stepper_a_window_kept_to_be_measured_runs_its_whole_length_though_it_cannot_pass() -> None:
    """About 140 answers in the window can never show a P99 met: a judged step ends early;
    a window kept to be measured (the drift check's short windows) runs to its end."""
    judged = StepRules(measure_s=4.0, warmup_s=0.5, tail_s=2.0, record_lag_s=0.0)
    measured = dataclasses.replace(judged, looks=1, curtail=False)
    offsets = np.linspace(0.0, 4.49, 160)
    assert _watch_open(judged, P99, offsets).now_s < judged.window[1]
    assert _watch_open(measured, P99, offsets).now_s >= measured.schedule_s


def _mdc_runner(url: str, tmp_path: Path) -> StepRunner:
    """Steps of a constant mix with a P95 objective against the M/D/c queue at `url` (4 workers of
    20 ms: 200 answers/s, so every step at 40 req/s passes), with `chain` on."""
    path = tmp_path / "mdc.yaml"
    path.write_text(yaml.safe_dump({"name": "mdc", "traffic": {"model": "constant:1", "duration": "60s", "seed": 3},
                                    "target": {"url": url}, "load": {"max_lag_p99_ms": 250},
                                    "slos": [{"name": "p95", "kind": "latency", "percentile": 95,
                                              "threshold_ms": 500}]}))
    scenario = load_scenario(path)
    return StepRunner(url=url, mix=load_mix(scenario, source=str(path), base_dir=tmp_path), specs=list(scenario.slos),
                      load=scenario.load, rules=step_rules(4.0, 250.0), work_dir=tmp_path / "steps", chain=True)


def _generator_alive(runner: StepRunner) -> bool:
    held = runner._held
    return held is not None and held.session._proc is not None and held.session._proc.alive()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_step_at_the_rate_just_passed_goes_on_with_that_pass_s_load(tmp_path: Path) -> None:
    """A pass leaves its generator running; the next step at its rate is judged on the window right
    after the pass's, on the same load (no second generator, no warm-up), and is not held again.
    A next step at another rate stops the held load first and starts afresh."""
    for url in serve_mdc("4", "20"):
        runner = _mdc_runner(url, tmp_path)
        try:
            first = runner.run(40.0)
            assert first.assessment.decision == "pass", first.assessment
            assert runner.continues(40.0) and not runner.continues(44.0)
            assert _generator_alive(runner)
            held = runner._held
            assert held is not None
            second = runner.run(40.0)
            assert second.assessment.decision == "pass", second.assessment
            assert (second.index, second.continues, second.work_dir) == (2, 1, first.work_dir)
            start, end = second.rules.window
            assert start == min(first.assessment.now_s, first.rules.window[1])
            assert end - start == first.rules.measure_s
            # its own requests, disjoint from the pass's, and as many as the rate gives
            judged = second.requests[(second.requests["intended_s"] >= start) & (second.requests["intended_s"] < end)]
            assert judged["intended_s"].min() >= first.rules.window[1] - 1e-9
            assert second.assessment.figures["requests"] == len(judged) >= 0.8 * 40.0 * (end - start)
            assert not runner.continues(40.0) and not held.session._proc.alive()  # type: ignore[union-attr]
            third = runner.run(40.0)  # nothing held: a fresh step, which passes and is held
            assert third.continues is None and third.work_dir != first.work_dir and runner.continues(40.0)
            held = runner._held
            assert held is not None
            fourth = runner.run(44.0)
            assert fourth.continues is None and fourth.index == 4 and fourth.rules.window[0] == fourth.rules.warmup_s
            assert not held.session._proc.alive()  # type: ignore[union-attr]
            runner.release()
            assert runner._held is None and not runner.continues(44.0)
        finally:
            runner.release()
