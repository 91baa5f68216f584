from __future__ import annotations

import numpy as np
import pytest

from rushhour.reports.estimate.intervals import (
    binom_ppf,
    ci_ranks,
    grouped_percentiles,
    min_samples,
    nearest_rank,
    percentile_of,
    summary_percentiles,
)


def test_percentile_nearest_rank_is_an_observed_value() -> None:
    values = np.arange(1.0, 101.0)  # 1..100
    assert percentile_of(values, 50).value == 50.0
    assert percentile_of(values, 95).value == 95.0
    assert percentile_of(values, 99).value == 99.0
    assert percentile_of(np.array([10.0, 20.0, 30.0]), 50).value == 20.0
    assert nearest_rank(99.9, 1000) == 999


def test_percentile_ci_bounds_from_binomial_ranks() -> None:
    # Bin(100, 0.5): 2.5% quantile 40, 97.5% quantile 60 -> ranks 40 and 61.
    assert ci_ranks(50, 100) == (40, 61)
    result = percentile_of(np.arange(1.0, 101.0), 50)
    assert (result.ci_low, result.ci_high, result.samples) == (40.0, 61.0, 100)
    assert result.trusted


def test_percentile_from_too_few_samples_is_flagged() -> None:
    # P99 needs an upper bound inside the data: 0.99**n <= 0.025 first holds at n = 368.
    assert 0.99 ** 367 > 0.025 >= 0.99 ** 368
    assert not percentile_of(np.arange(99.0), 99).trusted
    assert percentile_of(np.arange(99.0), 99).ci_high is None
    assert not percentile_of(np.arange(367.0), 99).trusted
    assert percentile_of(np.arange(368.0), 99).trusted
    assert min_samples(99) == 100 and min_samples(99.9) == 1000


def test_percentile_ignores_nan_and_handles_empty() -> None:
    assert percentile_of(np.array([np.nan, 5.0]), 50).value == 5.0
    empty = percentile_of(np.array([np.nan]), 99)
    assert empty.value is None and empty.samples == 0 and not empty.trusted


def test_summary_percentiles_keys() -> None:
    assert list(summary_percentiles(np.arange(10.0))) == ["p50", "p95", "p99", "p999"]


def test_grouped_percentiles_match_per_group() -> None:
    groups = np.array([0, 0, 0, 0, 2, 2, 1])
    values = np.array([4.0, 1.0, 3.0, 2.0, 9.0, 7.0, np.nan])
    result, counts = grouped_percentiles(groups, values, 50, 3)
    assert result[0] == 2.0 and result[2] == 7.0 and np.isnan(result[1])
    assert counts.tolist() == [4, 0, 2]
    tail, _ = grouped_percentiles(groups, values, 99, 3)
    assert tail[0] == pytest.approx(4.0)


def test_binom_ppf_is_scipy_stats_binom_ppf_in_the_tails_the_ranks_use() -> None:
    from scipy.stats import binom

    sizes = [*range(0, 300), 1000, 4321, 100_000, 10**7]
    for p in (0.0, 0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0):
        for prob in (0.005, 0.025, 0.05, 0.95, 0.975, 0.995):
            assert [binom_ppf(prob, n, p) for n in sizes] == [int(binom.ppf(prob, n, p)) for n in sizes], (p, prob)

