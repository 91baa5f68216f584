"""The percentile bound behind a capacity step's "met": checked against queues whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.truth_processes import independent, mdc
from rushhour.reports.estimate.quantilebound import percentile_bound, percentile_look
from rushhour.reports.estimate.sequential import LOOKS, look_call


def _window(latency: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    late = latency > threshold
    return late, np.zeros_like(late), np.where(late, np.inf, latency)


def test_quantilebound_a_queued_window_with_no_late_request_and_its_p99_far_under_is_met() -> None:
    """The window a real run judged "not shown met": about 4,300 requests through an M/D/4 queue
    at 73% load (P99 near 3 service times), none past a threshold of 5 service times. The late
    share over the effective sample size cannot show it; the percentile bound does."""
    latency = mdc(np.random.default_rng(4), 1, 4_300, 0.73, 4, stationary=True)[0]
    late, unknown, values = _window(latency, 5.0)
    assert not late.any() and np.quantile(latency, 0.99) < 4.0
    call, bound = percentile_look(late, unknown, values, 99.0, 5.0, look=LOOKS, score=latency, floor=2.5)
    assert bool(call.met[0]) and bound.upper < 5.0
    share_only = look_call(late, unknown, 0.01, look=LOOKS, score=latency, floor=2.5)
    assert not bool(share_only.met[0])


def test_quantilebound_independent_latencies_at_the_threshold_are_met_at_most_the_stated_error() -> None:
    """Exponential latencies whose true P99 is the threshold: the bound alone is within it in at
    most 5% of 400 windows (beyond 9.5% is past Monte Carlo chance at 0.1%)."""
    rows = independent(np.random.default_rng(8), 400, 2_000)
    threshold = float(-np.log(0.01))
    within = [percentile_bound(row, 99.0, 0.05).within(threshold) for row in rows]
    assert np.mean(within) <= 0.095


@pytest.mark.parametrize("servers", [1, 4])
def test_quantilebound_a_queue_whose_p99_is_the_threshold_is_met_at_most_the_stated_error(servers: int) -> None:
    """M/D/c windows of 3,000 requests at 90% load, started stationary, against a threshold at the
    queue's true P99 (pooled over all 600,000 requests): "met" in at most 5% of 200 windows
    (beyond 9.5% is past Monte Carlo chance at 0.1%)."""
    rows = mdc(np.random.default_rng(9), 200, 3_000, 0.9, servers, stationary=True)
    threshold = float(np.quantile(rows, 0.99))
    met = [bool(percentile_look(*_window(row, threshold), 99.0, threshold, look=LOOKS, score=row,
                                floor=threshold / 2.0)[0].met[0]) for row in rows]
    assert np.mean(met) <= 0.095


def test_quantilebound_an_unknown_request_at_the_percentile_leaves_no_bound() -> None:
    values = np.linspace(1.0, 2.0, 1_000)
    values[-20:] = np.inf
    assert percentile_bound(values, 99.0, 0.05).upper == np.inf
    assert not percentile_bound(values, 99.0, 0.05).within(1e9)


def test_quantilebound_a_plateau_of_tied_latencies_still_has_a_spread() -> None:
    """4% of requests tied at 400 ms in three bursts, the rest at 100 ms: the P99 is 400 ms, and
    its error is at least the mean slope up from the P95, not zero."""
    values = np.full(1_500, 100.0)
    values[np.r_[100:120, 700:720, 1300:1320]] = 400.0
    bound = percentile_bound(values, 99.0, 0.05)
    assert bound.centre == 400.0 and bound.standard_error > 0.0


def test_quantilebound_too_few_effective_requests_for_a_p99_leave_no_bound() -> None:
    values = np.random.default_rng(2).exponential(1.0, 80)
    assert percentile_bound(values, 99.0, 0.05).upper == np.inf
    assert np.isfinite(percentile_bound(values, 95.0, 0.05).upper)
