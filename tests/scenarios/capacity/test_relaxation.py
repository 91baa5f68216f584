"""A fresh step's warm-up scaled to its queue's relaxation time: the formula at loads whose answer is
known, its heavy-traffic limit, the multiple against the Brownian queue's passage law, the cap, and
the plan and job that hand it to each step."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, cast

import pytest
from scipy.stats import norm

from rushhour.scenarios.capacity.bracket import plan_from_throughput
from rushhour.scenarios.capacity.job import CapacityJob, SloFloor, step_rules
from rushhour.scenarios.capacity.relaxation import (
    LONGEST_WARMUP_S,
    RELAXATIONS,
    fixed_warmup_s,
    relaxation_s,
    warmup_s,
)
from rushhour.scenarios.capacity.runner import _rules_at
from rushhour.scenarios.capacity.search import SearchSettings
from rushhour.scenarios.spec.model import load_scenario

ROOT = Path(__file__).resolve().parents[3]


def test_relaxation_time_is_the_mm1_formula_at_loads_with_round_answers() -> None:
    assert relaxation_s(0.81, 100.0) == pytest.approx(1.0)  # 1 / (100 x (1 - 0.9)^2)
    assert relaxation_s(0.25, 10.0) == pytest.approx(0.4)  # 1 / (10 x 0.5^2)
    assert relaxation_s(0.0, 40.0) == pytest.approx(1.0 / 40.0)
    assert relaxation_s(1.0, 40.0) == math.inf and relaxation_s(1.3, 40.0) == math.inf


def test_relaxation_time_grows_with_the_load_and_shrinks_with_the_throughput() -> None:
    times = [relaxation_s(load, 40.0) for load in (0.1, 0.5, 0.8, 0.9, 0.95, 0.99)]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert relaxation_s(0.9, 400.0) == pytest.approx(relaxation_s(0.9, 40.0) / 10.0)


@pytest.mark.parametrize("load", [0.99, 0.999])
def test_relaxation_time_meets_the_brownian_queues_in_heavy_traffic(load: float) -> None:
    """Near saturation it is the reflected Brownian motion's 2 sigma^2 / theta^2, drift
    X (1 - rho), variance X (rho + 1) per second (service as variable as exponential)."""
    throughput = 40.0
    brownian = 2.0 * throughput * (load + 1.0) / (throughput * (1.0 - load)) ** 2
    assert relaxation_s(load, throughput) == pytest.approx(brownian, rel=0.01)


def _tail_reached(units: float, quantile: float) -> float:
    """Share of its stationary value that P(R(t) > x) of a reflected Brownian motion (drift -1,
    variance 1) started at 0 has reached after `units`, x its stationary `quantile` level: the
    first-passage law of Brownian motion with drift to x, in closed form, over exp(-2x)."""
    x = math.log(1.0 / (1.0 - quantile)) / 2.0
    root = math.sqrt(units)
    passed = norm.sf((x + units) / root) + math.exp(-2.0 * x) * norm.cdf((units - x) / root)
    return passed / math.exp(-2.0 * x)


def test_the_warmups_relaxation_times_bring_a_p99_tail_near_its_steady_value() -> None:
    """The relaxation time is 2 units of sigma^2 / theta^2; RELAXATIONS of them bring the P99's
    tail to about 95% of its stationary value, one relaxation time only to about half."""
    assert 0.93 <= _tail_reached(2.0 * RELAXATIONS, 0.99) < 0.96
    assert _tail_reached(2.0, 0.99) < 0.6
    assert _tail_reached(2.0 * RELAXATIONS, 0.95) > _tail_reached(2.0 * RELAXATIONS, 0.99)


def test_warmup_is_the_fixed_one_far_from_the_knee_and_scaled_near_it() -> None:
    assert warmup_s(10.0, 40.0, 30.0) == 5.0 == fixed_warmup_s(30.0)
    near = warmup_s(34.9, 40.0, 30.0)  # the slow M/D/c's knee, load 0.87
    assert near == pytest.approx(RELAXATIONS * relaxation_s(34.9 / 40.0, 40.0))
    assert 12.0 < near < 17.0


def test_warmup_is_capped_by_the_window_and_the_longest_warmup_at_and_past_saturation() -> None:
    assert warmup_s(39.9, 40.0, 20.0) == 20.0
    assert warmup_s(40.0, 40.0, 60.0) == LONGEST_WARMUP_S
    assert warmup_s(80.0, 40.0, 2.0) == 2.0  # at most the window, however short
    rates = [20.0, 30.0, 34.0, 36.0, 38.0, 40.0, 60.0]
    warmups = [warmup_s(rate, 40.0, 30.0) for rate in rates]
    assert warmups == sorted(warmups)


def test_a_zero_or_unknown_throughput_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"throughput 0\.0 req/s"):
        relaxation_s(0.5, 0.0)
    with pytest.raises(ValueError, match="nan"):
        relaxation_s(0.5, math.nan)


def test_the_plan_hands_each_rate_its_warmup_within_its_window() -> None:
    """A probe that read 40 answers/s, a P99 over the whole mix: each step's warm-up from the
    relaxation time at rate / 40, at least the fixed one of its window and at most the window."""
    floors = [SloFloor("p99", 1.0, 314, 0.0)]
    plan = plan_from_throughput(40.0, floors, precision=0.05, longest_s=30.0)
    assert plan is not None
    for rate in (12.0, 25.0, 34.9, 38.0, 42.0):
        window = plan.measure_at(rate)
        assert plan.warmup_at(rate) == warmup_s(rate, 40.0, window)
        assert fixed_warmup_s(window) <= plan.warmup_at(rate) <= window
    assert plan.warmup_at(12.0) == fixed_warmup_s(plan.measure_at(12.0))
    assert plan.warmup_at(42.0) == plan.measure_at(42.0)  # past the throughput: the whole window
    assert plan.as_dict()["warmup_relaxations"] == RELAXATIONS


def test_the_plan_warms_up_as_without_a_probe_where_a_pass_would_mean_the_probe_read_low() -> None:
    """From two moves above the probed throughput (where the climb speeds up) rate / throughput is
    no load, so those steps keep the fixed warm-up instead of a whole window's."""
    plan = plan_from_throughput(40.0, [SloFloor("p99", 1.0, 314, 0.0)], precision=0.05, longest_s=30.0)
    assert plan is not None and plan.settings.accelerate_above is not None
    edge = plan.settings.accelerate_above
    assert plan.warmup_at(edge * 0.999) == plan.measure_at(edge * 0.999)
    for rate in (edge, 60.0, 120.0):
        assert plan.warmup_at(rate) == fixed_warmup_s(plan.measure_at(rate))


def test_fixed_warmup_is_a_sixth_of_the_window_from_1_to_5_s() -> None:
    assert [fixed_warmup_s(window) for window in (3.0, 12.0, 30.0, 120.0)] == [1.0, 2.0, 5.0, 5.0]


def test_step_rules_take_a_given_warmup_else_the_fixed_one() -> None:
    assert step_rules(30.0, 50.0).warmup_s == 5.0
    assert step_rules(12.0, 50.0).warmup_s == 2.0
    rules = step_rules(30.0, 50.0, warmup_s=14.5)
    assert (rules.warmup_s, rules.window) == (14.5, (14.5, 44.5))


def test_a_planned_jobs_steps_take_the_plans_warmup_and_an_unplanned_jobs_the_fixed_one(tmp_path: Path) -> None:
    plan = plan_from_throughput(40.0, [SloFloor("p99", 1.0, 314, 0.0)], precision=0.05, longest_s=30.0)
    assert plan is not None
    job = CapacityJob(scenario=load_scenario(ROOT / "scenarios" / "promo-day.yaml"), source="promo-day.yaml",
                      base_dir=ROOT, mix=cast(Any, None), slos=[], conditions=["none"],
                      settings=SearchSettings(min_rps=1.0, max_rps=100.0), rules=step_rules(30.0, 50.0),
                      out_dir=tmp_path, measure_at=plan.measure_at, warmup_at=plan.warmup_at)
    planned = _rules_at(job)
    assert planned is not None
    assert [planned(rate).warmup_s for rate in (12.0, 34.9, 42.0)] == [plan.warmup_at(r) for r in (12.0, 34.9, 42.0)]
    assert planned(34.9).measure_s == plan.measure_at(34.9) and planned(34.9).warmup_s > fixed_warmup_s(30.0)
    unplanned = _rules_at(dataclasses.replace(job, warmup_at=None))
    assert unplanned is not None and unplanned(34.9).warmup_s == fixed_warmup_s(plan.measure_at(34.9))
