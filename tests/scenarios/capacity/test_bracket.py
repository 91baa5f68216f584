"""A search planned around the saturated throughput, against services whose knee is known.

The M/D/c queues of the ground-truth tests saturate at exactly workers / service time, so the
throughput probe's answer is known; the searches run unchanged against the simulated queue
(`benchmarks.mdc_search.simulate_step`), each step judged with its planned looks.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.mdc_search import MDC, STREAMING, Queue, found_capacities, simulate_step
from scenarios.capacity.bracket import MARGIN, START_SHARE, plan_from_throughput, step_length
from scenarios.capacity.job import SloFloor, load_mix, slo_floors, step_rules
from scenarios.capacity.search import search
from scenarios.spec.model import load_scenario

ROOT = Path(__file__).resolve().parents[3]
SEARCHES = 30
WRONG_MET_RATE = 0.05


def _floors(queue: Queue) -> list[SloFloor]:
    needed = 314 if queue.percentile == 99 else 62  # reports.stepstats.samples_to_pass for a P99 / P95
    return [SloFloor("objective", 1.0, needed, 0.0)]


def _saturation(queue: Queue) -> float:
    return queue.workers * 1000.0 / queue.service_ms


def _promo_floors() -> list[SloFloor]:
    scenario = load_scenario(ROOT / "scenarios" / "promo-day.yaml")
    mix = load_mix(scenario, source="promo-day", base_dir=ROOT / "scenarios")
    return slo_floors(mix, list(scenario.slos), 60.0)


def test_plan_starts_below_the_throughput_with_steps_as_long_as_the_first_rate_needs() -> None:
    floors = _promo_floors()
    plan = plan_from_throughput(72.0, floors, precision=0.1)
    assert plan is not None
    assert plan.start_rps == pytest.approx(START_SHARE * 72.0)
    paid = next(f for f in floors if f.name == "p99-paid")
    assert step_length(floors, plan.start_rps) == pytest.approx(paid.needed / (paid.share * plan.start_rps))
    assert plan.measure_s == math.ceil(MARGIN * step_length(floors, plan.start_rps)) < 60.0
    # the lowest rate is exactly where a step of that length holds what every SLO needs
    assert step_length(floors, plan.settings.min_rps) == pytest.approx(plan.measure_s)
    assert plan.settings.min_rps < plan.start_rps < 72.0 < plan.settings.max_rps
    # one move of the growth factor is already within the precision: pass, fail, confirm
    pass_rate = plan.start_rps
    assert (pass_rate * plan.settings.growth - pass_rate) / pass_rate <= 0.1


def test_plan_refuses_what_gives_no_search() -> None:
    floors = _promo_floors()
    assert plan_from_throughput(0.0, floors, precision=0.1) is None
    assert plan_from_throughput(float("nan"), floors, precision=0.1) is None
    # a knee so low that even 60 s steps cannot show the paid P99 met at the first rate
    assert plan_from_throughput(10.0, floors, precision=0.1) is None
    assert plan_from_throughput(50.0, [SloFloor("none", 0.0, 314, math.inf)], precision=0.1) is None
    assert plan_from_throughput(50.0, [], precision=0.1) is None


def test_plan_steps_never_shorter_than_the_shortest_step() -> None:
    plan = plan_from_throughput(2000.0, _promo_floors(), precision=0.1)
    assert plan is not None and plan.measure_s == 15.0


@pytest.mark.slow
@pytest.mark.parametrize(("queue", "wide_step_s"), [(MDC, 20.0), (STREAMING, 15.0)], ids=["mdc-p99", "streaming-ttft-p95"])
def test_planned_search_finds_what_the_whole_range_search_finds_in_fewer_steps(queue: Queue, wide_step_s: float) -> None:
    """Started from the known saturated throughput, the search reports above the long-run truth
    no more often than the stated 5%, lands where the ground-truth tests' search over the whole
    bracket lands (median within 10%), and takes fewer steps."""
    plan = plan_from_throughput(_saturation(queue), _floors(queue), precision=0.1)
    assert plan is not None
    rules = step_rules(plan.measure_s, 250.0)
    found, steps = np.zeros(SEARCHES), np.zeros(SEARCHES)
    for k in range(SEARCHES):
        step = functools.partial(simulate_step, queue, rules=rules, rng=np.random.default_rng([17, k]))
        result = search(step, plan.settings, start_rps=plan.start_rps)
        found[k], steps[k] = result.capacity_rps or 0.0, len(result.steps)
    truth = queue.truth()
    wide, wide_steps = found_capacities(queue, step_s=wide_step_s, searches=SEARCHES, seed=17, precision=0.1)
    assert float(np.mean(found > truth)) <= WRONG_MET_RATE, (found, truth)
    assert float(np.mean(found == 0.0)) <= 0.1, found
    assert float(np.median(found)) >= 0.9 * float(np.median(wide)), (found, wide)
    assert float(np.mean(steps)) < float(np.mean(wide_steps)), (steps, wide_steps)
