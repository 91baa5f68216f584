"""Paired block-bootstrap comparisons against samples whose truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from rushhour.reports.estimate.pairedblocks import (
    PairedSample,
    _grid,
    _replicates,
    block_weights,
    newcombe,
    percentile_ratio,
    share_difference,
)


def _pair(values: np.ndarray, pairs: int) -> PairedSample:
    return PairedSample(values, np.arange(values.size) % pairs)


def test_newcombe_interval_matches_his_published_example() -> None:
    # Newcombe (1998), table II example (h): 56/70 - 48/80, 95% interval 0.0524 to 0.3339
    low, high = newcombe(56, 70, 48, 80, 0.025)
    assert low == pytest.approx(0.0524, abs=5e-4) and high == pytest.approx(0.3339, abs=5e-4)


def test_block_weights_draw_every_replicate_to_the_number_of_pairs() -> None:
    weights = block_weights(50, 300, 4)
    assert weights.shape == (300, 50) and (weights.sum(axis=1) == 50).all()
    assert block_weights(50, 300, 4, block=5)[:, :5].std() > 0  # blocks start anywhere


def test_percentile_ratio_covers_a_known_scale_change() -> None:
    # the second sample is the first's distribution times 1.2: its P90 ratio is 1.2 exactly
    covered = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        first, second = rng.lognormal(0, 0.5, 4000), 1.2 * rng.lognormal(0, 0.5, 4000)
        found = percentile_ratio(_pair(first, 40), _pair(second, 40), 90.0, block_weights(40, 400, seed),
                                 low_tail=0.05, high_tail=0.05)
        covered += found.low <= 1.2 <= found.high
    assert covered >= 32  # a 90% interval over 40 draws; fewer than 32 has probability < 2%


def test_each_side_of_a_ratio_is_read_at_its_own_tail() -> None:
    rng = np.random.default_rng(3)
    first, second = _pair(rng.lognormal(0, 0.5, 3000), 30), _pair(rng.lognormal(0, 0.5, 3000), 30)
    weights = block_weights(30, 500, 3)
    even = percentile_ratio(first, second, 50.0, weights, low_tail=0.05, high_tail=0.05)
    strict_low = percentile_ratio(first, second, 50.0, weights, low_tail=0.005, high_tail=0.05)
    assert strict_low.low < even.low and strict_low.high == even.high


def test_a_state_shared_by_neighbouring_pairs_widens_the_ratio() -> None:
    # both samples slowed together over runs of 8 pairs: still no difference between them, and
    # blocks of pairs see the shared state move both at once, so the interval stays around 1
    rng = np.random.default_rng(5)
    pair = np.repeat(np.arange(64), 60)
    state = np.repeat(rng.normal(0, 0.4, 8), 8)[pair]
    first = PairedSample(rng.lognormal(0, 0.3, pair.size) * np.exp(state), pair)
    second = PairedSample(rng.lognormal(0, 0.3, pair.size) * np.exp(state), pair)
    found = percentile_ratio(first, second, 50.0, block_weights(64, 500, 5), low_tail=0.05, high_tail=0.05)
    assert found.low < 1.0 < found.high


def test_share_difference_finds_a_worse_share_and_clears_an_equal_one() -> None:
    rng = np.random.default_rng(8)
    base = _pair(rng.random(20_000) < 0.01, 100)
    worse = share_difference(base, _pair(rng.random(20_000) < 0.03, 100), block_weights(100, 500, 8),
                             low_tail=0.025, high_tail=0.025)
    same = share_difference(base, _pair(rng.random(20_000) < 0.01, 100), block_weights(100, 500, 8),
                            low_tail=0.025, high_tail=0.025)
    assert worse.low > 0 and worse.difference == pytest.approx(0.02, abs=0.005)
    assert same.low < 0 < same.high


def _running_sum_percentiles(sample: PairedSample, weights: np.ndarray, percentile: float,
                             edges: np.ndarray) -> np.ndarray:
    """The plain way: each replicate's weighted running count over every bin, read where it reaches."""
    pairs, bins = weights.shape[1], edges.size - 1
    keep = sample.within(pairs)
    index = np.clip(np.searchsorted(edges, np.maximum(sample.values[keep], edges[0]), side="right") - 1, 0, bins - 1)
    hist = np.bincount(sample.pair[keep] * bins + index, minlength=pairs * bins).reshape(pairs, bins)
    running = np.cumsum(weights @ hist, axis=1)
    need = np.round(percentile / 100.0 * running[:, -1], 9)
    return np.where(running[:, -1] > 0, edges[np.argmax(running >= need[:, None], axis=1) + 1], np.nan)


@pytest.mark.parametrize("seed", range(12))
def test_replicate_percentiles_are_those_of_a_running_sum_over_every_bin(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pairs, n = int(rng.integers(2, 90)), int(rng.integers(50, 4000))
    values = rng.lognormal(3.0, rng.uniform(0.2, 2.0), n)
    values = np.round(values) if seed % 3 == 0 else values  # ties
    sample = PairedSample(values, rng.integers(-1, pairs + 1, n))  # some outside the pairs compared
    weights = block_weights(pairs, 300, seed)
    edges = _grid(values)
    for percentile in (50.0, 99.0, 99.9, 100.0):
        expected = _running_sum_percentiles(sample, weights, percentile, edges)
        assert np.array_equal(_replicates(sample, weights, percentile, edges), expected, equal_nan=True)
