"""The A/B statistics against simulated runs whose truth is known."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rushhour.reports.ab.groups import Population, compare_populations
from rushhour.reports.ab.paired import (
    ArmSample,
    block_weights,
    error_test,
    ratio_test,
    required_answers,
)
from tests.reports.ab.simulate import simulate

PAID = Population("paid", "paid", None, None, (("latency_ms", 99.0, "p99"),))
CONFIDENCE = 0.90
STATED_FALSE_ALARMS = (1.0 - CONFIDENCE) / 2.0  # one-sided: the regression side of the interval


def _comparison(effect: float, seed: int, *, pairs: int = 48, per_trial: int = 30, **kwargs: object) -> Any:
    requests = simulate(effect, pairs=pairs, per_trial=per_trial, seed=seed, **kwargs)  # type: ignore[arg-type]
    [comparison] = compare_populations(requests, [PAID], pairs=pairs, threshold=1.10, confidence=CONFIDENCE,
                                       seed=seed)
    return comparison


def _rate(verdicts: list[str], verdict: str) -> float:
    return sum(v == verdict for v in verdicts) / len(verdicts)


@pytest.mark.slow
def test_ab_same_code_false_alarm_rate_stays_within_the_stated_level() -> None:
    # 300 nights with a slow AR(1) machine state lasting several slices, and bursts
    verdicts = [_comparison(1.0, seed).verdict for seed in range(300)]
    assert _rate(verdicts, "regression") <= STATED_FALSE_ALARMS


def test_ab_same_code_rarely_alarms_under_a_persistent_machine_state() -> None:
    verdicts = [_comparison(1.0, seed, interleave="requests").verdict for seed in range(40)]
    assert _rate(verdicts, "regression") <= 0.05


def test_ab_finds_a_thirty_percent_slowdown_under_machine_noise() -> None:
    verdicts = [_comparison(1.3, seed, pairs=96, per_trial=60, interleave="requests").verdict for seed in range(30)]
    assert _rate(verdicts, "regression") >= 0.8
    assert _rate(verdicts, "no_regression") == 0.0


def test_ab_a_real_slowdown_is_never_called_no_regression() -> None:
    verdicts = [_comparison(1.3, seed).verdict for seed in range(40)]
    assert _rate(verdicts, "no_regression") <= STATED_FALSE_ALARMS


@pytest.mark.slow
@pytest.mark.parametrize("drift", [
    lambda t: np.log(1.0 + 2.0 * t),  # the machine slows threefold over the run
    lambda t: np.log(3.0) * (t > 0.5),  # a neighbour arrives halfway
    lambda t: np.log(3.0) * (np.floor(t * 48) % 2),  # a neighbour on every other trial
], ids=["ramp", "step", "alternating"])
def test_ab_time_varying_noise_on_both_arms_creates_no_regression(drift: object) -> None:
    verdicts = [_comparison(1.0, seed, extra=drift).verdict for seed in range(200)]
    assert _rate(verdicts, "regression") <= STATED_FALSE_ALARMS


def test_ab_ratio_is_of_the_nights_percentiles_not_of_slice_maxima() -> None:
    rng = np.random.default_rng(7)
    pair = np.repeat(np.arange(40), 80)  # 80 answers per slice: a slice's P99 is its maximum
    base = rng.lognormal(np.log(100.0), 0.6, pair.size)
    cand = rng.lognormal(np.log(100.0), 0.6, pair.size) * 1.3
    ok = np.ones(pair.size, bool)
    result = ratio_test(ArmSample.of(base, ok, pair), ArmSample.of(cand, ok, pair), 99.0,
                        block_weights(40, 1000, 1), alarm_tail=0.05, pass_tail=0.05, threshold=1.1)
    pooled = np.percentile(cand, 99, method="inverted_cdf") / np.percentile(base, 99, method="inverted_cdf")
    assert result.ratio == pytest.approx(pooled)
    assert result.low < pooled < result.high


def test_ab_failures_are_left_out_of_percentiles_and_judged_as_shares() -> None:
    # 0.25% failures in both arms: latency compared on answers, shares shown within the margin
    same = [_comparison(1.0, seed, pairs=96, per_trial=60, fail_share=0.0025, base_fail_share=0.0025,
                        interleave="requests") for seed in range(20)]
    assert all(c.ratio.compared for c in same)
    assert sum(c.errors.not_worse for c in same) >= 18 and sum(c.errors.worse for c in same) <= 1
    assert _rate([c.verdict for c in same], "regression") <= 0.05
    slow = [_comparison(1.3, seed, pairs=96, per_trial=60, fail_share=0.0025, base_fail_share=0.0025,
                        interleave="requests").verdict for seed in range(20)]
    assert _rate(slow, "regression") >= 0.8


def test_ab_percentile_with_too_few_answers_is_not_compared() -> None:
    comparison = _comparison(1.0, 3, pairs=24, per_trial=20)  # 480 answers per arm, P99 needs 1,000
    assert required_answers(99.0) == 1000 and required_answers(50.0) == 20
    assert comparison.verdict == "not_compared"
    assert "P99 needs 1,000 answered requests per arm" in comparison.reason


def test_ab_quiet_machine_same_code_is_no_regression() -> None:
    requests = simulate(1.0, pairs=48, per_trial=200, seed=3)
    requests["latency_ms"] = 100.0 + (requests.index.to_numpy() % 7)  # no machine noise at all
    [comparison] = compare_populations(requests, [PAID], pairs=48, threshold=1.10, confidence=CONFIDENCE, seed=3)
    assert comparison.verdict == "no_regression"
    assert comparison.ratio.low <= 1.0 <= comparison.ratio.high < 1.10


def test_ab_candidate_failing_ten_percent_is_a_regression() -> None:
    sample = ArmSample.of(np.array([5.0, 7.0, np.nan]), np.array([True, False, True]), np.array([0, 0, 0]))
    assert list(sample.values) == [5.0] and sample.n == 2  # the never-sent row is left out
    verdicts = [_comparison(1.0, seed, fail_share=0.10).verdict for seed in range(10)]
    assert set(verdicts) == {"regression"}


def test_error_test_flags_a_candidate_failing_a_tenth_of_requests() -> None:
    base = ArmSample.of(np.full(400, 100.0), np.ones(400, bool), np.arange(400) % 20)
    ok = (np.arange(400) // 20) % 10 != 0  # two failures in every pair
    cand = ArmSample.of(np.full(400, 100.0), ok, np.arange(400) % 20)
    result = error_test(base, cand, block_weights(20, 1000, 1), alarm_tail=0.025, pass_tail=0.025, margin=0.005)
    assert result.worse and not result.not_worse
    assert result.candidate == pytest.approx(0.10) and result.baseline == 0.0


def test_error_test_ignores_failures_bunched_in_one_slice() -> None:
    pair = np.arange(400) % 20
    base = ArmSample.of(np.full(400, 100.0), np.ones(400, bool), pair)
    cand = ArmSample.of(np.full(400, 100.0), ~((pair == 3) & (np.arange(400) < 200)), pair)  # one burst
    result = error_test(base, cand, block_weights(20, 1000, 1), alarm_tail=0.025, pass_tail=0.025, margin=0.005)
    assert result.candidate > 0.02 and not result.worse and not result.not_worse


def test_error_test_never_passes_a_candidate_failing_more_than_the_margin() -> None:
    rng = np.random.default_rng(11)
    passed = 0
    for seed in range(40):
        pair = np.arange(20_000) % 100
        base = ArmSample.of(np.full(20_000, 1.0), rng.random(20_000) >= 0.0025, pair)
        cand = ArmSample.of(np.full(20_000, 1.0), rng.random(20_000) >= 0.0100, pair)  # 0.75 pp worse
        passed += error_test(base, cand, block_weights(100, 500, seed), alarm_tail=0.025, pass_tail=0.025, margin=0.005).not_worse
    assert passed == 0
