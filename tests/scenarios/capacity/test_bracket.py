"""A search planned around the saturated throughput, against services whose knee is known.

The M/D/c queues of the ground-truth tests saturate at exactly workers / service time, so the
throughput probe's answer is known; the searches run unchanged against the simulated queue
(`benchmarks.mdc_search.ChainedSteps`), each step judged with its planned looks and sized to
its rate as `rushhour capacity` sizes it, a confirmation right after its pass going on with its load.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.mdc_search import MDC, STREAMING, ChainedSteps, Queue, found_capacities
from rushhour.reports.capacity.stepstats import samples_to_pass
from rushhour.reports.estimate.sequential import ALPHA
from rushhour.reports.schema import SloSpec
from rushhour.scenarios.capacity.bracket import HIGHEST_START, MARGIN, knee_share, plan_from_throughput, step_length
from rushhour.scenarios.capacity.job import SloFloor, load_mix, slo_floors, step_rules
from rushhour.scenarios.capacity.search import SearchResult, StepVerdict, search
from rushhour.scenarios.spec.model import load_scenario

ROOT = Path(__file__).resolve().parents[3]
SEARCHES = 30
WRONG_MET_RATE = 0.05
LOOSE = Queue(name="M/D/c, P99 <= 1.5 s", workers=16, service_ms=300.0, threshold_ms=1500.0, percentile=99.0,
              min_rps=10.0, max_rps=80.0)
"""A queue whose objective leaves room for queueing, as promo-day's do: its knee lies close to
its throughput (53.3 answers/s), where a search started at 0.8 of it walks up one step at a time."""


def _floors(queue: Queue, met_error: float = ALPHA) -> list[SloFloor]:
    return [SloFloor("objective", 1.0, samples_to_pass(_slos(queue)[0], met_error=met_error), 0.0)]


def _slos(queue: Queue) -> list[SloSpec]:
    kind = "latency" if queue.first_ms is None else "ttft"
    return [SloSpec(name="objective", kind=kind, percentile=queue.percentile, threshold_ms=queue.threshold_ms)]


def _saturation(queue: Queue) -> float:
    return queue.workers * 1000.0 / queue.service_ms


def _promo() -> tuple[list[SloFloor], list[SloSpec]]:
    scenario = load_scenario(ROOT / "scenarios" / "promo-day.yaml")
    mix = load_mix(scenario, source="promo-day", base_dir=ROOT / "scenarios")
    return slo_floors(mix, list(scenario.slos), 60.0), list(scenario.slos)


def _planned_search(queue: Queue, probe_rps: float, seed: int, *, met_error: float = ALPHA,
                    precision: float = 0.1) -> tuple[SearchResult, float]:
    """One simulated search planned from `probe_rps`, each step sized to its rate and spending
    `met_error` on "met"; the result and the seconds its steps took on the step clock."""
    plan = plan_from_throughput(probe_rps, _floors(queue, met_error), precision=precision, slos=_slos(queue))
    assert plan is not None
    step = ChainedSteps(queue, lambda rate: step_rules(plan.measure_at(rate), 250.0, met_error),
                        np.random.default_rng([17, seed]))
    return search(step, plan.settings, start_rps=plan.start_rps), step.seconds


def test_knee_share_leaves_room_for_the_queueing_each_objective_allows() -> None:
    tight = knee_share(40.0, _slos(MDC))  # P99 <= 500 ms at 40 answers/s
    assert 0.75 < tight < 0.87  # the long-run truth of that M/D/c is 0.87 of its throughput
    assert knee_share(40.0, [*_slos(MDC), *_slos(LOOSE)]) == tight  # the tightest objective decides
    assert tight < knee_share(53.3, _slos(LOOSE)) <= HIGHEST_START
    # objectives on errors or shares say nothing of queueing: the cap alone
    availability = SloSpec(name="a", kind="availability", objective=0.99)
    assert knee_share(40.0, [availability]) == knee_share(40.0, []) == HIGHEST_START


def test_plan_starts_one_move_above_the_estimated_knee_with_each_step_as_long_as_its_rate_needs() -> None:
    floors, slos = _promo()
    plan = plan_from_throughput(72.0, floors, precision=0.1, slos=slos)
    assert plan is not None
    assert plan.start_rps == pytest.approx(knee_share(72.0, slos) * 72.0 * plan.settings.growth)
    assert knee_share(72.0, slos) > 0.9  # promo-day's P99s of 2 s and 5 s leave room near the throughput
    paid = next(f for f in floors if f.name == "p99-paid")
    assert step_length(floors, plan.start_rps) == pytest.approx(paid.needed / (paid.share * plan.start_rps))
    assert plan.measure_s == plan.measure_at(plan.start_rps) == math.ceil(MARGIN * step_length(floors, plan.start_rps))
    # a step above the first rate is shorter, one below it longer, none past the longest
    below, above = plan.start_rps / plan.settings.growth, plan.start_rps * plan.settings.growth
    assert plan.measure_at(above) < plan.measure_s < plan.measure_at(below) <= 60.0
    # the lowest rate is exactly where the longest step holds what every SLO needs
    assert step_length(floors, plan.settings.min_rps) == pytest.approx(60.0)
    assert plan.measure_at(plan.settings.min_rps) == 60.0
    assert plan.settings.min_rps < plan.start_rps < plan.settings.max_rps
    assert plan.settings.accelerate_above is not None
    assert plan.start_rps < 72.0 * plan.settings.growth <= plan.settings.accelerate_above  # no faster climb yet
    # one move of the growth factor is already within the precision: pass, fail, confirm
    assert (plan.start_rps * plan.settings.growth - plan.start_rps) / plan.start_rps <= 0.1


@pytest.mark.parametrize(("knee_share_of_throughput", "steps", "failures"),
                         [(1.06, 3, 1), (0.97, 3, 1), (0.88, 4, 2)],
                         ids=["knee-at-start", "knee-one-move-below", "knee-two-moves-below"])
def test_planned_search_near_a_knee_close_to_the_throughput_takes_three_steps(knee_share_of_throughput: float,
                                                                              steps: int, failures: int) -> None:
    """promo-day's calibration probed 52.7 answers/s and found its knee at 51.0 req/s (0.97); a
    plan at 0.8 of the throughput took five steps to it (three passes on the way up). Started one
    move above the estimated knee, the search needs a pass, a failure one precision away and the
    confirmation when the knee lies at the start or one move below it; two moves below, it pays
    one failure more (the kind that ends early), never a passing step more."""
    floors, slos = _promo()
    plan = plan_from_throughput(52.7, floors, precision=0.1, slos=slos)
    assert plan is not None
    knee = knee_share_of_throughput * 52.7
    tried: list[float] = []

    def step(rate: float) -> StepVerdict:
        tried.append(rate)
        return StepVerdict(rate, "pass" if rate <= knee else "fail", None if rate <= knee else "p99-free")

    result = search(step, plan.settings, start_rps=plan.start_rps)
    assert len(tried) == steps and result.confirmed, tried
    assert sum(s.verdict == "fail" for s in result.steps) == failures, tried
    assert result.capacity_rps is not None and result.capacity_rps <= knee < (result.first_fail or 0.0)


def test_simulated_search_of_a_queue_with_room_reaches_a_confirmed_capacity_in_few_steps() -> None:
    """The queue of LOOSE, simulated, with the probe reading 10% low, exactly or 10% high: a plan
    at 0.8 of the throughput takes 4.9 steps on average (6.1 with the probe low), one at the
    estimated knee 3.9 (5.1 with the probe low), this plan 3.7 (3.3 with the probe low, 4.5 with
    it high), and each search ends with a rate that passed."""
    steps, seconds = [], []
    for k in range(SEARCHES):
        probe = _saturation(LOOSE) * (0.9, 1.0, 1.1)[k % 3]
        result, took = _planned_search(LOOSE, probe, k)
        assert result.capacity_rps is not None, result.steps
        steps.append(len(result.steps))
        seconds.append(took)
    assert float(np.mean(steps)) <= 4.0, steps
    assert float(np.mean(seconds)) <= 4.0 * 15.0 + 15.0, seconds  # 15 s windows at these rates, plus warm-ups


def test_simulated_search_from_a_probe_that_read_half_the_throughput_climbs_to_the_same_knee() -> None:
    """A busy machine can make the probe read half the truth. Past the probed throughput each pass
    squares the growth, so the same search (no widening, no new boot) still ends at a confirmed
    capacity where a search from an exact probe ends: 9.3 steps and 158 s of steps on average
    against 3.6 and 62 s (a plan capped at 1.3 X ran into its ceiling and was searched again with
    60 s steps)."""
    half, exact = [], []
    for k in range(SEARCHES):
        result, seconds = _planned_search(LOOSE, 0.5 * _saturation(LOOSE), k)
        assert result.capacity_rps is not None and not result.ceiling and result.confirmed, result.steps
        half.append((result, seconds))
        exact.append(_planned_search(LOOSE, _saturation(LOOSE), k))
    median = float(np.median([r.capacity_rps for r, _ in half]))
    assert median == pytest.approx(float(np.median([r.capacity_rps for r, _ in exact])), rel=0.1)
    assert float(np.mean([len(r.steps) for r, _ in half])) <= 11.0
    assert float(np.mean([t for _, t in half])) <= 3.0 * float(np.mean([t for _, t in exact]))


def test_plan_refuses_what_gives_no_search() -> None:
    floors = _promo()[0]
    assert plan_from_throughput(0.0, floors, precision=0.1) is None
    assert plan_from_throughput(float("nan"), floors, precision=0.1) is None
    # a knee so low that even 60 s steps cannot show the paid P99 met at the first rate
    assert plan_from_throughput(10.0, floors, precision=0.1) is None
    assert plan_from_throughput(50.0, [SloFloor("none", 0.0, 314, math.inf)], precision=0.1) is None
    assert plan_from_throughput(50.0, [], precision=0.1) is None


def test_plan_steps_never_shorter_than_the_shortest_step() -> None:
    plan = plan_from_throughput(2000.0, _promo()[0], precision=0.1)
    assert plan is not None and plan.measure_s == plan.measure_at(plan.settings.max_rps) == 15.0


@pytest.mark.slow
@pytest.mark.parametrize(("queue", "wide_step_s"), [(MDC, 20.0), (STREAMING, 15.0)], ids=["mdc-p99", "streaming-ttft-p95"])
def test_planned_search_finds_what_the_whole_range_search_finds_in_fewer_steps(queue: Queue, wide_step_s: float) -> None:
    """Started from the known saturated throughput, the search reports above the long-run truth
    no more often than the stated 5%, lands where the ground-truth tests' search over the whole
    bracket lands (median within 10%), and takes fewer steps."""
    found, steps = np.zeros(SEARCHES), np.zeros(SEARCHES)
    for k in range(SEARCHES):
        result, _seconds = _planned_search(queue, _saturation(queue), k)
        found[k], steps[k] = result.capacity_rps or 0.0, len(result.steps)
    truth = queue.truth()
    wide, wide_steps = found_capacities(queue, step_s=wide_step_s, searches=SEARCHES, seed=17, precision=0.1)
    assert float(np.mean(found > truth)) <= WRONG_MET_RATE, (found, truth)
    assert float(np.mean(found == 0.0)) <= 0.1, found
    assert float(np.median(found)) >= 0.9 * float(np.median(wide)), (found, wide)
    assert float(np.mean(steps)) < float(np.mean(wide_steps)), (steps, wide_steps)


@pytest.mark.slow
@pytest.mark.parametrize("queue", [MDC, STREAMING], ids=["mdc-p99", "streaming-ttft-p95"])
def test_a_calibrations_search_with_paired_windows_still_stays_at_or_below_the_truth(queue: Queue) -> None:
    """A calibration's search, whose windows spend sqrt(5%) on "met" and whose figure needs a
    second passing window, from the known throughput at the calibration's precision: it reports
    above the long-run truth no more often than the stated 5%, confirms every figure, and gets
    at least as close to the truth as the same search at 5% a window, in no more steps."""
    from rushhour.scenarios.capacity.calibrate import CALIBRATION_MET_ERROR, CALIBRATION_PRECISION

    searches = 100
    paired = [_planned_search(queue, _saturation(queue), k, met_error=CALIBRATION_MET_ERROR,
                              precision=CALIBRATION_PRECISION)[0] for k in range(searches)]
    single = [_planned_search(queue, _saturation(queue), k, precision=CALIBRATION_PRECISION)[0]
              for k in range(searches)]
    found = np.array([r.capacity_rps or 0.0 for r in paired])
    assert all(r.confirmed for r in paired), [r.steps for r in paired if not r.confirmed]
    assert float(np.mean(found > queue.truth())) <= WRONG_MET_RATE, (found, queue.truth())
    assert float(np.median(found)) >= float(np.median([r.capacity_rps or 0.0 for r in single]))
    assert float(np.mean([len(r.steps) for r in paired])) <= float(np.mean([len(r.steps) for r in single]))
