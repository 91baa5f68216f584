"""The moving-block bootstrap, for the truth bench to set beside batch means.

Künsch's moving-block bootstrap: a resample is the run's blocks of `block_len` consecutive
requests, drawn with replacement from every starting point and laid end to end to the run's
length; the interval is the 2.5th and 97.5th percentiles of the statistic over the resamples.
It gets the same block length batch means chose, so the two differ only in how they turn blocks
into an interval. Not used by reports: `--bootstrap` on `benchmarks.truth_bench` runs it.
"""

from __future__ import annotations

import numpy as np

from rushhour.reports.estimate.intervals import CONFIDENCE

RESAMPLES = 200


def moving_block_interval(series: np.ndarray, percentile: float, block_len: int,
                          rng: np.random.Generator, resamples: int = RESAMPLES) -> tuple[float, float]:
    """(low, high) of the `percentile` of `series` (time order) at `CONFIDENCE`."""
    n = series.size
    block_len = max(1, min(block_len, n))
    blocks = -(-n // block_len)
    starts = rng.integers(0, n - block_len + 1, size=(resamples, blocks))
    index = (starts[:, :, None] + np.arange(block_len)).reshape(resamples, -1)[:, :n]
    replicates = np.quantile(series[index], percentile / 100.0, axis=1, method="inverted_cdf")
    tail = (1.0 - CONFIDENCE) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail])
    return float(low), float(high)
