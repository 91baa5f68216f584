"""The bounded live tallies against exact answers on known data: percentiles within the stated
relative error, window sums equal to a scan of every event."""

from __future__ import annotations

import numpy as np
import pytest

from rushhour.kernel.quantiles import percentile_value
from rushhour.scenarios.run.live.hist import DEFAULT_ALPHA, LogHistogram, TimeRing


@pytest.mark.parametrize("percentile", [1, 50, 90, 99, 99.9, 100])
def test_histogram_percentile_is_within_alpha_of_the_exact_nearest_rank(percentile: float) -> None:
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.lognormal(np.log(0.12), 0.9, 50_000), rng.uniform(2.0, 30.0, 500)])
    hist = LogHistogram(lo=1e-4, hi=1e4)
    for chunk in np.array_split(values, 7):
        hist.observe(chunk)
    exact = percentile_value(values, percentile)
    by_counts = hist.percentile(percentile, hist.counts)  # without the min/max clamp
    assert abs(by_counts - exact) <= DEFAULT_ALPHA * exact
    assert abs(hist.percentile(percentile) - exact) <= DEFAULT_ALPHA * exact
    assert hist.count == values.size


def test_histogram_of_one_repeated_value_reads_it_exactly_and_skips_nan() -> None:
    hist = LogHistogram(lo=1e-3, hi=1e8)
    hist.observe(np.array([100.0] * 20 + [np.nan] * 5))
    assert hist.count == 20 and hist.percentile(99) == 100.0
    assert np.isnan(LogHistogram().percentile(99))


def test_histogram_cells_count_apart_and_the_edges_read_as_lo_and_hi() -> None:
    hist = LogHistogram(lo=1e-3, hi=10.0, shape=(2,))
    hist.observe(np.array([0.0, 0.0005, 50.0, 1.0]), (np.array([0, 0, 1, 1]),))
    assert hist.counts[0].sum() == 2 and hist.counts[1].sum() == 2
    assert hist.percentile(50, hist.counts[0]) == 1e-3
    assert hist.percentile(100, hist.counts[1]) == 10.0
    assert hist.percentile(50, hist.counts[1]) == pytest.approx(1.0, rel=DEFAULT_ALPHA)


def test_histogram_refuses_bad_bounds() -> None:
    with pytest.raises(ValueError, match="alpha=1.5"):
        LogHistogram(alpha=1.5)


def test_time_ring_window_equals_a_scan_at_bin_edges() -> None:
    rng = np.random.default_rng(5)
    times = np.sort(rng.uniform(0.0, 300.0, 20_000))
    failed = rng.random(times.size) < 0.2
    ring = TimeRing(bin_s=0.5, span_s=60.0, shape=(2,))
    for part in np.array_split(np.arange(times.size), 40):  # arrives a little at a time, as parts do
        ring.add(times[part], (np.zeros(part.size, dtype=np.int64),))
        ring.add(times[part][failed[part]], (np.ones(int(failed[part].sum()), dtype=np.int64),))
    for now, window in ((300.0, 10.0), (299.5, 60.0), (280.0, 5.5)):
        inside = (times > now - window) & (times <= now)
        assert ring.window(now, window).tolist() == [inside.sum(), (inside & failed).sum()]


def test_time_ring_forgets_what_is_older_than_its_span_and_keeps_late_arrivals() -> None:
    ring = TimeRing(bin_s=1.0, span_s=10.0)
    ring.add(np.array([1.0, 2.0]))
    ring.add(np.array([30.0]))
    ring.add(np.array([25.0, 3.0]))  # 25 s is late but inside the span; 3 s is long gone
    assert ring.window(30.0, 10.0) == 2.0
    assert ring.window(30.0, 100.0) == 2.0  # a window longer than the span is cut to it
    assert ring.slots == 11
