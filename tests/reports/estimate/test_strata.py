"""The stratified basis: a run whose load changes at known edges is measured within each stretch."""

from __future__ import annotations

import numpy as np

from rushhour.reports.estimate.blocks import METHOD as WHOLE_RUN
from rushhour.reports.estimate.blocks import dependence
from rushhour.reports.estimate.series import quantile_interval, share_interval
from rushhour.reports.estimate.strata import METHOD, stratified_dependence, stretch_labels


def _stepped(rng: np.random.Generator, n: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """Independent exponential latencies whose level doubles in the middle third (a known peak)."""
    labels = stretch_labels(np.arange(n, dtype=float), [n / 3, 2 * n / 3])
    return rng.exponential(1.0, n) * np.where(labels == 1, 2.0, 1.0), labels


def test_stretch_labels_count_the_edges_at_or_before_each_time() -> None:
    labels = stretch_labels(np.array([0.0, 1.0, 2.5, 3.0, 9.0]), [3.0, 1.0, 1.0])
    assert labels.tolist() == [0, 1, 1, 2, 2]


def test_stratified_dependence_of_one_stretch_is_the_whole_run_basis() -> None:
    series = np.random.default_rng(1).random(5_000)
    one = stratified_dependence(series, np.zeros(5_000, dtype=int))
    assert one == dependence(series)


def test_stratified_dependence_does_not_count_a_known_step_as_noise() -> None:
    # independent requests around a step: one basis over the run sees the step as long memory,
    # the stretches see independent requests
    values, labels = _stepped(np.random.default_rng(2))
    flags = (values > 2.0).astype(float)
    whole = dependence(flags)
    cut = stratified_dependence(flags, labels)
    assert cut.method == METHOD and whole.method == WHOLE_RUN
    assert whole.design_effect > 3.0 and cut.design_effect < 1.5
    assert not cut.outlasts_blocks


def test_stratified_dependence_takes_a_ramp_trend_out_of_each_stretch() -> None:
    rng = np.random.default_rng(3)
    n = 12_000
    ramp = rng.normal(0.0, 1.0, n) + np.linspace(0.0, 6.0, n)
    labels = np.zeros(n, dtype=int)
    labels[n // 2:] = 1
    assert stratified_dependence(ramp, labels).design_effect < 1.5
    assert dependence(ramp).design_effect > 10.0


def test_stratified_dependence_charges_a_stretch_that_outlasts_its_blocks() -> None:
    # a slow random walk in the second stretch: its blocks stay correlated, so it counts as a
    # handful of requests and the run's effective size falls far below its count
    rng = np.random.default_rng(4)
    calm = rng.normal(0.0, 1.0, 4_000)
    walk = np.cumsum(rng.normal(0.0, 1.0, 4_000)) + rng.normal(0.0, 1.0, 4_000)
    series = np.concatenate((calm, walk))
    labels = np.repeat([0, 1], 4_000)
    seen = stratified_dependence(series, labels)
    assert seen.effective < 200 and not seen.outlasts_blocks


def test_quantile_and_share_intervals_within_stretches_commit_where_one_basis_declines() -> None:
    rng = np.random.default_rng(5)
    values, labels = _stepped(rng, 30_000)
    whole, cut = quantile_interval(values, 95.0), quantile_interval(values, 95.0, strata=labels)
    assert cut.enough and cut.dependence.method == METHOD
    assert cut.low is not None and cut.high is not None and cut.value is not None
    assert cut.low <= cut.value <= cut.high
    # true P95 of the mixture (two thirds Exp(1), one third Exp(1) x 2), solved numerically
    grid = np.linspace(2.0, 8.0, 60_001)
    truth = grid[np.argmin(np.abs((2 * np.exp(-grid) + np.exp(-grid / 2)) / 3 - 0.05))]
    assert cut.low <= truth <= cut.high
    assert whole.dependence.effective < cut.dependence.effective
    share = share_interval(values > truth, levels=values, strata=labels)
    assert share.low is not None and share.high is not None and share.low <= 0.05 <= share.high
