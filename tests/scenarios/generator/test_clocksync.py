"""The clock offset between a worker and the master, and the version a worker must match."""

from __future__ import annotations

import pytest

from rushhour.scenarios.generator.clocksync import ClockSample, estimate_offset, software_version


def test_estimate_offset_keeps_the_shortest_round_trip() -> None:
    # the master's clock is 2.5 s ahead; the slow sample's asymmetric legs would mislead by 0.2 s
    fast = ClockSample(sent=100.000, master=102.501, back=100.002)
    slow = ClockSample(sent=100.100, master=102.900, back=100.500)
    sync = estimate_offset([slow, fast])
    assert sync.offset_s == pytest.approx(2.5, abs=1e-9)
    assert sync.rtt_s == pytest.approx(0.002)
    assert sync.error_bound_s == pytest.approx(0.001)


def test_estimate_offset_converts_the_masters_start_into_the_workers_clock() -> None:
    sync = estimate_offset([ClockSample(sent=10.0, master=7.0, back=10.0)])  # worker 3 s ahead
    assert sync.to_worker_clock(1000.0) == pytest.approx(1003.0)


def test_estimate_offset_without_samples_says_why() -> None:
    with pytest.raises(ValueError, match="No clock sample"):
        estimate_offset([])


def test_software_version_names_rushhour_and_locust() -> None:
    assert software_version().startswith("rushhour ") and ", locust " in software_version()
