from __future__ import annotations

import numpy as np
import pytest

from rushhour.reports.measures.faults import (
    RecoveryLimits,
    fault_impact,
    fault_windows,
    limits_for,
    recovery_time,
    steady_state,
)
from rushhour.reports.schema import SloSpec
from tests.reports.helpers import requests_frame

LIMITS = RecoveryLimits(percentile=99, threshold_ms=100, max_error_rate=0.1, window_s=2.0, min_requests=15)


def _after_fault() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """10 req/s over [0, 15): fault in [5, 10); slow bin [10, 11), erroring bin [11, 12)."""
    times = np.arange(150) * 0.1 + 0.05
    latency = np.where((times >= 5) & (times < 11), 500.0, 20.0)
    ok = ~((times >= 11) & (times < 12) & (np.arange(150) % 2 == 0))
    return times, latency, ok


def test_recovery_is_the_first_sustained_stretch_back_within_slo() -> None:
    times, latency, ok = _after_fault()
    frame = requests_frame(times, latency, ok=ok)
    assert recovery_time(frame, 10.0, LIMITS, 15.0) == (pytest.approx(2.0), None)
    # Latency alone: the bin [11, 12) is fast but half failed, and a failure is a bad event for
    # the latency SLO too.
    latency_only = RecoveryLimits(percentile=99, threshold_ms=100, window_s=2.0, min_requests=15)
    assert recovery_time(frame, 10.0, latency_only, 15.0)[0] == 2.0
    fast_ok = requests_frame(times, latency)
    assert recovery_time(fast_ok, 10.0, latency_only, 15.0)[0] == 1.0


def test_recovery_none_when_never_back_or_no_slo() -> None:
    times, _, _ = _after_fault()
    frame = requests_frame(times, np.full(times.size, 500.0))
    assert recovery_time(frame, 10.0, LIMITS, 15.0) == (None, None)
    assert recovery_time(frame, 10.0, RecoveryLimits(), 15.0)[0] is None


def test_recovery_one_good_request_between_failures_is_no_recovery() -> None:
    # 10 req/s; after the fault ends at 10 s the first second holds one good request alone, then
    # failures until 20 s, then healthy
    times = np.concatenate([np.arange(0.05, 10.0, 0.1), [10.5], np.arange(11.05, 30.0, 0.1)])
    ok = (times < 5) | (times >= 20) | (times == 10.5)
    frame = requests_frame(times, np.full(times.size, 20.0), ok=ok)
    limits = RecoveryLimits(percentile=99, threshold_ms=100, max_error_rate=0.01)  # defaults: 5 s, 20 requests
    recovery, unclear = recovery_time(frame, 10.0, limits, 30.0)
    assert recovery == pytest.approx(10.0) and unclear is None  # back at 20 s, not at the lone good one at 10 s


def test_recovery_at_a_rate_too_low_to_tell_says_so() -> None:
    times = np.arange(0.5, 30.0, 1.0)  # 1 req/s: 5 requests in any 5 s stretch, never 20
    ok = (times < 5) | (times >= 10)
    frame = requests_frame(times, np.full(times.size, 20.0), ok=ok)
    recovery, unclear = recovery_time(frame, 10.0, RecoveryLimits(percentile=99, threshold_ms=100), 30.0)
    assert recovery is None and unclear is not None and "too low to tell" in unclear


def test_recovery_window_and_minimum_come_from_the_chaos_entry() -> None:
    window = fault_windows([{"type": "fault_start", "t_s": 5.0, "name": "kill", "experiment": "x/kill.json"},
                            {"type": "fault_end", "t_s": 10.0, "name": "kill"}], 30.0)[0]
    chaos = [{"experiment": "kill.json", "at": "00:01", "recovery_window": "2m", "recovery_min_requests": 3}]
    limits = limits_for(RecoveryLimits(threshold_ms=100, percentile=99), window, chaos, time_scale=60.0)
    assert (limits.window_s, limits.min_requests) == (2.0, 3)


def test_recovery_limits_prefer_unfiltered_slos() -> None:
    specs = [SloSpec(name="paid", kind="latency", percentile=95, threshold_ms=50, priority="paid"),
             SloSpec(name="all", kind="latency", percentile=99, threshold_ms=300),
             SloSpec(name="avail", kind="availability", objective=0.95)]
    limits = RecoveryLimits.from_slos(specs)
    assert (limits.percentile, limits.threshold_ms) == (99, 300)
    assert limits.max_error_rate == pytest.approx(0.05)


def test_fault_windows_pair_events_and_close_open_ones() -> None:
    events = [{"type": "fault_start", "t_s": 5.0, "name": "kill", "experiment": "kill.json"},
              {"type": "fault_start", "t_s": 7.0, "name": "net"},
              {"type": "fault_end", "t_s": 10.0, "name": "kill"}]
    kill, net = fault_windows(events, 20.0)
    assert (kill.name, kill.start_s, kill.end_s, kill.ended) == ("kill", 5.0, 10.0, True)
    assert (net.name, net.end_s, net.ended) == ("net", 20.0, False)


def test_fault_impact_counts_and_worst_p99() -> None:
    times, latency, ok = _after_fault()
    frame = requests_frame(times, latency, ok=ok)
    frame.loc[(times >= 6) & (times < 7), ["ok", "status"]] = [False, 503]
    [window] = fault_windows([{"type": "fault_start", "t_s": 5.0, "name": "kill"},
                              {"type": "fault_end", "t_s": 10.0, "name": "kill"}], 15.0)
    journal = {"status": "completed", "steady_states": {"before": {"steady_state_met": True},
                                                         "after": {"steady_state_met": False}}}
    row = fault_impact(frame, window, LIMITS, 15.0, journal)
    assert row["requests"] == 50 and row["failed_requests"] == 10 and row["shed_requests"] == 10
    assert row["p99_during_ms"] == 500.0 and row["recovery_s"] == pytest.approx(2.0)
    assert row["steady_state"] == {"status": "completed", "deviated": False,
                                   "before_met": True, "after_met": False}
    assert steady_state(None) is None
