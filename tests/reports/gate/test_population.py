"""The paired bootstrap's resampled percentile: counted from the blocks, equal to building the resample."""

from __future__ import annotations

import numpy as np
import pytest

from rushhour.reports.gate.population import block_length, block_starts, resampled_rank


def _built(values: np.ndarray, starts: np.ndarray, length: int, rank: int) -> np.ndarray:
    """The resample itself (each draw's blocks joined, cut to n) and its value at `rank`."""
    n = values.size
    ids = (starts[:, :, None] + np.arange(length)).reshape(len(starts), -1)[:, :n]
    return np.partition(values[ids], rank, axis=1)[:, rank]


def _values(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "ties and failures":
        values = rng.integers(0, 4, n).astype(float)
        values[rng.random(n) < 0.05] = np.inf
        return values
    if kind == "rising":  # the tail at the end, where blocks cover each id least
        return np.arange(n, dtype=float)
    if kind == "falling":
        return np.arange(n, 0, -1, dtype=float)
    return rng.lognormal(3.0, 1.0, n)


@pytest.mark.parametrize("kind", ["lognormal", "ties and failures", "rising", "falling"])
@pytest.mark.parametrize(("n", "percentile"), [(1, 99.0), (7, 50.0), (300, 99.0), (1000, 95.0), (1000, 10.0),
                                               (2500, 99.9)])
def test_population_resampled_rank_equals_the_built_resample(kind: str, n: int, percentile: float) -> None:
    rng = np.random.default_rng(n)
    values = _values(kind, n, rng)
    length = block_length(n)
    starts = block_starts(rng, 300, n, length)
    rank = min(n - 1, int(np.ceil(percentile / 100 * n)) - 1)
    found = resampled_rank(values, np.argsort(values, kind="stable"), starts, length, rank)
    np.testing.assert_array_equal(found, _built(values, starts, length, rank))
