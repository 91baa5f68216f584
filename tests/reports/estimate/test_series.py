"""Intervals for time-ordered requests: widen with dependence, say when data are too few."""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from rushhour.reports.estimate.blocks import COUNT_METHOD, METHOD, block_means, dependence, lag1
from rushhour.reports.estimate.series import (
    needed_effective,
    not_enough_text,
    quantile_interval,
    share_interval,
)


def _ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    return lfilter([1.0], [1.0, -phi], rng.normal(size=n))


def test_block_means_keep_every_point() -> None:
    series = np.arange(10, dtype=float)
    means = block_means(series, 3)
    assert means.size == 3
    assert np.isclose(means @ np.diff(np.linspace(0, 10, 4).round()), series.sum())


def test_lag1_of_an_ar1_series_is_its_coefficient() -> None:
    assert abs(lag1(_ar1(np.random.default_rng(3), 50_000, 0.7)) - 0.7) < 0.02


def test_dependence_of_independent_draws_is_close_to_their_count() -> None:
    seen = dependence(np.random.default_rng(4).normal(size=20_000))
    assert seen.method == METHOD
    assert 0.5 * 20_000 < seen.effective <= 20_000


def test_dependence_of_a_correlated_series_matches_its_design_effect() -> None:
    # AR(1) with phi = 0.95: the long-run variance is (1 + phi) / (1 - phi) = 39 times the plain one
    seen = dependence(_ar1(np.random.default_rng(5), 200_000, 0.95))
    assert 20 < seen.design_effect < 80
    assert seen.block_len > 1


def test_dependence_of_a_constant_series_counts_requests() -> None:
    seen = dependence(np.zeros(1000))
    assert seen.method == COUNT_METHOD
    assert seen.effective == 1000


def test_quantile_interval_of_independent_draws_brackets_the_truth() -> None:
    rng = np.random.default_rng(6)
    result = quantile_interval(rng.exponential(size=20_000), 99.0)
    assert result.enough and result.low is not None and result.high is not None
    assert result.low < np.log(100) < result.high


def test_quantile_interval_widens_with_autocorrelation() -> None:
    rng = np.random.default_rng(7)
    plain = quantile_interval(rng.normal(size=200_000), 99.0)
    correlated = _ar1(rng, 200_000, 0.97) * np.sqrt(1 - 0.97**2)
    wide = quantile_interval(correlated, 99.0)
    assert plain.high is not None and plain.low is not None
    assert wide.high is not None and wide.low is not None
    assert (wide.high - wide.low) > 3 * (plain.high - plain.low)
    assert wide.dependence.design_effect > 10


def test_quantile_interval_declines_when_the_run_is_shorter_than_its_memory() -> None:
    # a level that wanders over a fifth of the run: thirty blocks stay correlated
    rng = np.random.default_rng(10)
    slow = _ar1(rng, 20_000, 1 - 1 / 4_000) * np.sqrt(1 - (1 - 1 / 4_000) ** 2)
    result = quantile_interval(slow + 0.1 * rng.normal(size=20_000), 95.0)
    assert result.dependence.outlasts_blocks
    assert not result.enough and result.low is None and result.high is None
    assert "too short for its memory" in (result.note or "")


def test_quantile_interval_says_when_data_are_too_few() -> None:
    result = quantile_interval(np.random.default_rng(8).normal(size=300), 99.0)
    assert not result.enough
    assert result.high is None
    assert result.note == not_enough_text(99.0, result.dependence.effective)
    assert "at least 368 needed" in (result.note or "")


def test_needed_effective_for_common_percentiles() -> None:
    assert needed_effective(99.0) == 368
    assert needed_effective(99.9) == 3688
    assert needed_effective(50.0) == 6


def test_share_interval_widens_when_failures_come_in_bursts() -> None:
    rng = np.random.default_rng(9)
    scattered = rng.random(20_000) < 0.01
    bursts = np.repeat(rng.random(200) < 0.01, 100)
    plain, wide = share_interval(scattered), share_interval(bursts)
    assert wide.dependence.design_effect > 20
    assert wide.high is not None and plain.high is not None
    assert wide.high - (wide.low or 0) > 3 * (plain.high - (plain.low or 0))


def test_share_interval_without_bad_requests_counts_them() -> None:
    result = share_interval(np.zeros(1000, dtype=bool))
    assert result.value == 0.0 and result.low == 0.0
    assert result.high is not None and 0.0 < result.high < 0.01
    assert result.dependence.method == COUNT_METHOD
