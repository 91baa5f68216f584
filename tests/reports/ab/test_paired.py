"""The A/B statistics against simulated runs whose truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from rushhour.reports.ab.groups import Population, compare_populations
from rushhour.reports.ab.paired import ArmSample, _excluded, error_test, hodges_lehmann, pair_weights
from tests.reports.ab.simulate import simulate

PAID = Population("paid", "paid", None, None, (("latency_ms", 99.0, "p99"),))
CONFIDENCE = 0.90
STATED_FALSE_ALARMS = (1.0 - CONFIDENCE) / 2.0  # one-sided: the regression side of the interval


def _verdict(effect: float, seed: int, *, pairs: int = 24, per_trial: int = 40, **kwargs: object) -> str:
    requests = simulate(effect, pairs=pairs, per_trial=per_trial, seed=seed, **kwargs)  # type: ignore[arg-type]
    [comparison] = compare_populations(requests, [PAID], pairs=pairs, threshold=1.10, confidence=CONFIDENCE,
                                       seed=seed)
    return comparison.verdict


def _rate(verdicts: list[str], verdict: str) -> float:
    return sum(v == verdict for v in verdicts) / len(verdicts)


@pytest.mark.slow
def test_ab_same_code_false_alarm_rate_stays_within_the_stated_level() -> None:
    verdicts = [_verdict(1.0, seed) for seed in range(300)]
    assert _rate(verdicts, "regression") <= STATED_FALSE_ALARMS


def test_ab_finds_a_thirty_percent_slowdown_under_machine_noise() -> None:
    verdicts = [_verdict(1.3, seed, pairs=96, per_trial=20) for seed in range(60)]
    assert _rate(verdicts, "regression") >= 0.8
    assert _rate(verdicts, "no_regression") == 0.0


def test_ab_a_real_slowdown_is_never_called_no_regression() -> None:
    verdicts = [_verdict(1.3, seed) for seed in range(100)]
    assert _rate(verdicts, "no_regression") <= STATED_FALSE_ALARMS


@pytest.mark.slow
@pytest.mark.parametrize("drift", [
    lambda t: np.log(1.0 + 2.0 * t),  # the machine slows threefold over the run
    lambda t: np.log(3.0) * (t > 0.5),  # a neighbour arrives halfway
    lambda t: np.log(3.0) * (np.floor(t * 48) % 2),  # a neighbour on every other trial
], ids=["ramp", "step", "alternating"])
def test_ab_time_varying_noise_on_both_arms_creates_no_regression(drift: object) -> None:
    verdicts = [_verdict(1.0, seed, extra=drift) for seed in range(200)]
    assert _rate(verdicts, "regression") <= STATED_FALSE_ALARMS


def test_ab_quiet_machine_same_code_is_no_regression() -> None:
    requests = simulate(1.0, pairs=24, per_trial=200, seed=3)
    requests["latency_ms"] = 100.0 + (requests.index.to_numpy() % 7)  # no machine noise at all
    [comparison] = compare_populations(requests, [PAID], pairs=24, threshold=1.10, confidence=CONFIDENCE, seed=3)
    assert comparison.verdict == "no_regression"
    assert comparison.ratio.low <= 1.0 <= comparison.ratio.high < 1.10


def test_ab_failures_count_as_infinitely_slow() -> None:
    sample = ArmSample.of(np.array([5.0, 7.0, np.nan]), np.array([True, False, True]), np.array([0, 0, 0]))
    assert list(sample.values) == [5.0, np.inf]  # the never-sent row is left out
    verdicts = [_verdict(1.0, seed, fail_share=0.10) for seed in range(20)]
    assert set(verdicts) == {"regression"}


def test_error_test_flags_a_candidate_failing_a_tenth_of_requests() -> None:
    base = ArmSample.of(np.full(400, 100.0), np.ones(400, bool), np.arange(400) % 20)
    ok = (np.arange(400) // 20) % 10 != 0  # two failures in every pair
    cand = ArmSample.of(np.full(400, 100.0), ok, np.arange(400) % 20)
    result = error_test(base, cand, pair_weights(20, 2000, 1), confidence=0.95)
    assert result.worse and result.candidate == pytest.approx(0.10) and result.baseline == 0.0


def test_error_test_ignores_failures_bunched_in_one_trial() -> None:
    base = ArmSample.of(np.full(400, 100.0), np.ones(400, bool), np.arange(400) % 20)
    pair = np.arange(400) % 20
    cand = ArmSample.of(np.full(400, 100.0), ~((pair == 3) & (np.arange(400) < 200)), pair)  # one burst
    result = error_test(base, cand, pair_weights(20, 2000, 1), confidence=0.95)
    assert result.candidate > 0.02 and not result.worse


def test_signed_rank_exclusions_match_the_published_table() -> None:
    # Wilcoxon signed-rank critical values (one-sided 5%): n=12 -> T <= 17, n=20 -> T <= 60
    assert _excluded(12, 0.05) == 18 and _excluded(20, 0.05) == 61
    assert _excluded(5, 0.025) == 0  # five pairs cannot reach 2.5% on one side


def test_hodges_lehmann_interval_covers_the_centre_at_its_level() -> None:
    rng = np.random.default_rng(1)
    hits = [lo <= 0.0 <= hi for _, lo, hi in (hodges_lehmann(rng.standard_t(3, 15), 0.05) for _ in range(2000))]
    assert np.mean(hits) >= 0.88  # heavy tails, 90% interval: distribution-free


def test_ratio_bound_that_reaches_a_failed_pair_reads_as_infinite() -> None:
    from rushhour.reports.ab.paired import ratio_test

    pair = np.repeat(np.arange(12), 10)
    base = ArmSample.of(np.full(120, 100.0), np.ones(120, bool), pair)
    values = np.full(120, 90.0)
    ok = ~((pair == 0) & (np.arange(120) % 10 < 3))  # pair 0 of the candidate fails beyond its P99
    result = ratio_test(base, ArmSample.of(values, ok, pair), 99.0, 12, confidence=0.90, threshold=1.1)
    assert result.ratio == pytest.approx(0.9)
    assert result.high == np.inf or result.high < 2.0  # never a huge finite ratio
    assert np.isnan(result.mde) or result.mde < 10.0


def test_pairs_where_both_arms_failed_beyond_the_percentile_are_left_out() -> None:
    from rushhour.reports.ab.paired import pair_log_ratios, ratio_test

    pair = np.repeat(np.arange(24), 20)
    saturated = pair < 16  # two thirds of the pairs: both arms time out beyond their P99
    ok = ~(saturated & (np.arange(480) % 20 < 5))
    rng = np.random.default_rng(3)
    base = ArmSample.of(rng.lognormal(np.log(100.0), 0.3, 480), ok, pair)
    cand = ArmSample.of(rng.lognormal(np.log(100.0), 0.3, 480), ok, pair)
    logs = pair_log_ratios(base, cand, 99.0, 24)
    assert logs.size == 8 and np.isfinite(logs).all()  # only the pairs that measured something
    result = ratio_test(base, cand, 99.0, 24, confidence=0.90, threshold=1.1)
    assert result.pairs == 8
    assert result.high - result.low > 0.2  # eight noisy pairs: no tight interval pinned at 1


def test_pairs_where_both_arms_read_zero_are_left_out() -> None:
    from rushhour.reports.ab.paired import pair_log_ratios, ratio_test

    pair = np.repeat(np.arange(12), 10)
    rng = np.random.default_rng(5)
    base_values = rng.lognormal(np.log(100.0), 0.2, 120)
    cand_values = rng.lognormal(np.log(130.0), 0.2, 120)
    zero = pair < 4  # a third of the pairs: both arms' every value is exactly 0
    base_values[zero] = 0.0
    cand_values[zero] = 0.0
    ok = np.ones(120, bool)
    base, cand = ArmSample.of(base_values, ok, pair), ArmSample.of(cand_values, ok, pair)
    logs = pair_log_ratios(base, cand, 50.0, 12)
    assert logs.size == 8 and np.isfinite(logs).all()
    result = ratio_test(base, cand, 50.0, 12, confidence=0.90, threshold=1.1)
    assert result.pairs == 8
    assert 1.15 < result.ratio < 1.45
