"""The one percentile in rushhour: nearest rank, an observed value and never an interpolation.

Reports, the live progress line, the generator's lag check and steady-state probes all use it,
so one run never shows two different P99s.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["nearest_rank", "percentile_or_none", "percentile_value"]


def nearest_rank(percentile: float, n: int) -> int:
    """1-based rank of the nearest-rank percentile among n sorted samples."""
    return min(n, max(1, math.ceil(round(percentile / 100.0 * n, 9))))


def percentile_value(values: ArrayLike, percentile: float) -> float:
    """The nearest-rank `percentile` of `values` (NaN dropped); NaN when nothing is left."""
    data = np.asarray(values, dtype=float)
    data = data[~np.isnan(data)]
    if data.size == 0:
        return float("nan")
    rank = nearest_rank(percentile, int(data.size))
    return float(np.partition(data, rank - 1)[rank - 1])


def percentile_or_none(values: ArrayLike, percentile: float) -> float | None:
    """`percentile_value`, with None instead of NaN when there is no value (JSON has no NaN)."""
    value = percentile_value(values, percentile)
    return None if math.isnan(value) else value
