"""The search's anchor: a machine 10% slower at the search's end is seen, flagged in capacity.json
and shown on capacity.html; a steady one is not flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rushhour.reports.capacity.document_model import ConditionResult
from rushhour.reports.capacity.page import render_capacity_html
from rushhour.scenarios.capacity.anchor import Anchor, window_latencies
from rushhour.scenarios.capacity.record import condition_entry
from rushhour.scenarios.capacity.search import SearchResult, StepVerdict
from rushhour.scenarios.capacity.stepper import StepRecord
from tests.scenarios.capacity.search_standins import KneeAt60, search_condition, step_record


def _searched() -> SearchResult:
    result = SearchResult(steps=[StepVerdict(40.0, "pass"), StepVerdict(80.0, "pass"), StepVerdict(90.0, "fail")],
                          last_pass=80.0, first_fail=90.0, limiting="p99", confirmed=True)
    return result


def _checked(speed: float, seed: int) -> tuple[dict[str, Any] | None, list[float]]:
    rng = np.random.default_rng(seed)
    anchor, asked = Anchor(), []
    anchor.keep(step_record(1, 20.0, 1.0, rng, decision="fail"))  # not a pass: never the anchor
    anchor.keep(step_record(2, 40.0, 1.0, rng))
    anchor.keep(step_record(3, 80.0, 1.0, rng))  # a later pass: the first one stays the anchor
    assert anchor.wanted(_searched())

    def again(rate: float) -> StepRecord:
        asked.append(rate)
        return step_record(9, rate, speed, rng)

    return anchor.check(again, say=lambda _text: None), asked


def test_window_latencies_are_the_answered_requests_of_the_window_in_time_order() -> None:
    record = step_record(1, 40.0, 1.0, np.random.default_rng(1))
    frame = record.requests.sort_values("intended_s")
    inside = frame[(frame["intended_s"] >= 5.0) & (frame["intended_s"] < 35.0) & frame["ok"]]
    assert np.array_equal(window_latencies(record), inside["latency_ms"].to_numpy())


def test_a_machine_ten_percent_slower_at_the_end_marks_the_figure_unconfirmed() -> None:
    flagged = 0
    for seed in range(10):
        drift, asked = _checked(1.1, seed)
        assert asked == [40.0] and drift is not None
        flagged += bool(drift["changed"])
    assert flagged >= 9
    assert drift is not None and drift["changed"]
    assert 1.05 < drift["ratio"] < 1.15 and drift["interval"][0] > 1.0
    entry = condition_entry("none", _searched(), [], require_rps=None, wall_s=1.0, machine_drift=drift)
    assert entry["confirmed"] is False and entry["machine_drift"] == drift
    assert "not confirmed: the machine answered the same load (40.0 req/s)" in entry["summary"]
    assert "% slower at the end than at the start" in entry["summary"]
    assert "the figure holds for the machine as it ran, not a steady one" in entry["summary"]
    parsed = ConditionResult.model_validate(entry | {"interrupted": False})
    assert parsed.machine_drift is not None and parsed.machine_drift.steps == [2, 9]
    html = render_capacity_html({"scenario": "s", "target": "t", "aborted": None, "slos": [], "wall_s": 1.0,
                                 "settings": {"step_duration_s": 30.0, "warmup_s": 5.0, "precision": 0.05, "seed": 1},
                                 "environment": {}, "conditions": [entry]})
    assert "Unconfirmed: the machine answered the same load (40.0 req/s)" in html
    assert "not a steady one" in html and "steps 2 and 9" in html


def test_a_steady_machine_keeps_its_confirmed_figure() -> None:
    flags = 0
    for seed in range(20):
        drift, _ = _checked(1.0, 100 + seed)
        assert drift is not None
        flags += bool(drift["changed"])
    assert flags <= 1
    entry = condition_entry("none", _searched(), [], require_rps=None, wall_s=1.0,
                            machine_drift=_checked(1.0, 5)[0])
    assert entry["confirmed"] is True and "not confirmed" not in entry["summary"]
    assert entry["machine_drift"]["changed"] is False


def test_no_anchor_without_a_pass_or_without_a_figure() -> None:
    anchor = Anchor()
    assert not anchor.wanted(_searched())
    anchor.keep(step_record(1, 40.0, 1.0, np.random.default_rng(2)))
    assert not anchor.wanted(SearchResult(steps=[StepVerdict(40.0, "invalid")], generator_bound=True, last_pass=40.0))
    assert not anchor.wanted(SearchResult())
    assert condition_entry("none", _searched(), [], require_rps=None, wall_s=1.0)["machine_drift"] is None


class _SlowingService(KneeAt60):
    """Each step's machine is `slowing` slower than the one before (0: steady)."""

    seed = 4
    slowing = 0.0

    def speed(self) -> float:
        return 1.0 + self.slowing * self.index


@pytest.mark.parametrize("slowing, changed", [(0.01, True), (0.0, False)])
def test_the_search_steps_its_first_pass_again_at_the_end_and_judges_the_machine(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, slowing: float, changed: bool) -> None:
    monkeypatch.setattr(_SlowingService, "slowing", slowing)
    entry, said = search_condition(monkeypatch, _SlowingService, tmp_path, "ends")
    service = _SlowingService.last
    assert service.rates[0] == 20.0 and service.rates[-1] == 20.0  # the anchor: the first pass, again at the end
    assert len(entry["steps"]) == len(service.rates) - 1  # the anchor's end step is not a search step
    drift = entry["machine_drift"]
    assert drift["steps"] == [1, len(service.rates)] and drift["changed"] is changed
    assert entry["confirmed"] is (not changed)
    assert ("not confirmed: the machine answered the same load (20.0 req/s)" in entry["summary"]) is changed
    assert any("anchor: 20.0 req/s again, to compare with step 1" in line for line in said)
