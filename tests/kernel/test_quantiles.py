from __future__ import annotations

import math

from rushhour.kernel.quantiles import percentile_or_none, percentile_value


def test_percentile_value_is_an_observed_value_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile_value(values, 99) == 99.0
    assert percentile_value([5.0, 1.0, 3.0], 50) == 3.0
    assert percentile_value([1.0, float("nan"), 2.0], 100) == 2.0


def test_percentile_or_none_gives_none_where_there_is_no_value() -> None:
    assert math.isnan(percentile_value([], 99))
    assert percentile_or_none([], 99) is None
    assert percentile_or_none([float("nan")], 99) is None
    assert percentile_or_none([0.0, 0.0, 7.5], 99) == 7.5
