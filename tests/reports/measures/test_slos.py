from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from benchmarks.truth_processes import md1
from rushhour.reports.measures.slos import evaluate_slos
from rushhour.reports.schema import SloSpec
from tests.reports.helpers import requests_frame


def _evaluate(frame: pd.DataFrame, specs: list[SloSpec], duration: float = 10.0,
              time_scale: float = 1.0, phase_events: list | None = None) -> list[dict]:
    return evaluate_slos(frame, frame["phase"], phase_events or [], specs, duration, time_scale)


def test_slo_spec_requires_fields_of_its_kind() -> None:
    with pytest.raises(ValidationError, match="needs percentile"):
        SloSpec(name="p99", kind="latency", threshold_ms=100)
    spec = SloSpec.model_validate({"name": "a", "kind": "availability", "objective": 0.99})
    assert spec.allowed_bad_share == pytest.approx(0.01)


def test_availability_measured_met_and_budget() -> None:
    frame = requests_frame(np.arange(10.0), [100.0] * 10, ok=[True] * 8 + [False] * 2)
    [slo] = _evaluate(frame, [SloSpec(name="avail", kind="availability", objective=0.9)])
    assert slo["measured"] == pytest.approx(0.8)
    assert slo["met"] is False
    assert slo["budget_consumed"] == pytest.approx(2.0)  # 20% bad of a 10% budget
    assert slo["samples"] == 10 and slo["bad"] == 2
    low, high = slo["ci"]
    assert low < 0.8 < high


def test_latency_good_events_percentile_and_budget_agree() -> None:
    # Ok latencies 10..100 ms (10 requests) and one failure after 5000 ms: 11 attempts. Leaving the
    # failure out would give P90 90 ms over 10 samples; a failure is a slow request.
    latency = [10.0, 20, 30, 40, 50, 60, 70, 80, 90, 100, 5000]
    frame = requests_frame(np.arange(11.0), latency, ok=[True] * 10 + [False])
    specs = [SloSpec(name="p90-met", kind="latency", percentile=90, threshold_ms=100),
             SloSpec(name="p90-miss", kind="latency", percentile=90, threshold_ms=95)]
    met, missed = _evaluate(frame, specs)
    assert met["measured"] == met["measured_ms"] == 100.0 and met["samples"] == 11  # rank 10 of 11
    assert met["measured_ok_only_ms"] == 90.0 and met["samples_ok"] == 10
    assert met["met"] and met["good_share"] == pytest.approx(10 / 11)
    assert met["budget_consumed"] == pytest.approx(1 / 11 / 0.1)
    assert missed["measured"] == 100.0 and not missed["met"]
    assert missed["good_share"] == pytest.approx(9 / 11)
    assert missed["budget_consumed"] == pytest.approx(2 / 11 / 0.1)
    assert not met["trusted"]  # 11 samples cannot bound a P90 from above


def test_latency_fast_failure_is_still_a_bad_event() -> None:
    # 100 attempts at 10 ms, 5 of them failed fast: the percentile looks fine, the SLO is missed.
    frame = requests_frame(np.arange(100.0), np.full(100, 10.0), ok=[True] * 95 + [False] * 5)
    [slo] = _evaluate(frame, [SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=50)],
                      duration=100.0)
    assert slo["measured"] == 10.0 and slo["bad"] == 5 and not slo["met"]
    assert slo["good_share"] == pytest.approx(0.95)


def test_degraded_share_and_priority_filter() -> None:
    frame = requests_frame(np.arange(4.0), [10.0] * 4, degraded=[True, False, False, True],
                           priority=["paid", "paid", "free", "free"])
    specs = [SloSpec(name="deg", kind="degraded", max_share=0.4),
             SloSpec(name="deg-paid", kind="degraded", max_share=0.6, priority="paid")]
    overall, paid = _evaluate(frame, specs)
    assert overall["measured"] == pytest.approx(0.5) and not overall["met"]
    assert paid["measured"] == pytest.approx(0.5) and paid["samples"] == 2 and paid["met"]


def test_slo_per_phase_from_events() -> None:
    frame = requests_frame(np.arange(10.0), [10.0] * 10, ok=[True] * 5 + [False, True, True, True, True])
    events = [{"type": "phase", "name": "ramp", "start_s": 0, "end_s": 5},
              {"type": "phase", "name": "peak", "start_s": 5, "end_s": 10}]
    from rushhour.reports.rundata.selection import phase_labels

    phases = phase_labels(frame, events)
    [slo] = evaluate_slos(frame, phases, events, [SloSpec(name="a", kind="availability", objective=0.85)],
                          10.0, 1.0)
    assert [(p["phase"], p["measured"], p["met"]) for p in slo["phases"]] == [
        ("ramp", 1.0, True), ("peak", pytest.approx(0.8), False)]
    assert slo["measured"] == pytest.approx(0.9) and slo["met"]


def test_burn_rates_scaled_windows_and_page() -> None:
    # 100 req/s for 100 s; everything fails in [50, 55). time_scale 360 turns
    # 1h/5m into 10 s / 0.833 s and 6h/30m into 60 s / 5 s.
    times = np.arange(10_000) * 0.01 + 0.005
    ok = ~((times >= 50) & (times < 55))
    frame = requests_frame(times, np.full(times.size, 10.0), ok=ok)
    [slo] = _evaluate(frame, [SloSpec(name="a", kind="availability", objective=0.99)],
                      duration=100.0, time_scale=360.0)
    fast, slow = slo["burn_rates"]
    assert fast["long_window_s"] == pytest.approx(10.0) and fast["short_window_s"] == pytest.approx(300 / 360)
    assert fast["worst_short"] == pytest.approx(100.0)  # all bad over 0.83 s, 1% allowed
    assert fast["worst_long"] == pytest.approx(50.0)  # 500 bad of 1000 in [45, 55)
    assert fast["pages"] and fast["threshold"] == 14.4
    # Only whole 60 s windows count (the first ends at t=60): 500 bad of 6000 -> 8.33x, but by
    # then the 5 s window is clean, so the slow rule, looked at only inside the run, never pages.
    assert slow["worst_long"] == pytest.approx(500 / 6000 / 0.01)
    assert slow["worst_short"] == pytest.approx(0.0) and slow["evaluated"]
    assert not slow["pages"] and slow["first_page_s"] is None and slow["threshold"] == 6.0
    assert slo["budget_consumed"] == pytest.approx(5.0)  # 5% bad of a 1% budget


def test_three_bad_requests_at_run_start_page_no_rule() -> None:
    # 12,000 requests over 600 s, the first three bad, 99.9% allowed: a partial window at the
    # start would see 3 bad of a handful (a burn rate in the hundreds) and page both rules.
    times = np.arange(12_000) * 0.05 + 0.025
    ok = np.arange(12_000) >= 3
    frame = requests_frame(times, np.full(times.size, 10.0), ok=ok)
    spec = SloSpec(name="a", kind="availability", objective=0.999)
    [unscaled] = _evaluate(frame, [spec], duration=600.0, time_scale=1.0)
    assert [(rule["evaluated"], rule["pages"]) for rule in unscaled["burn_rates"]] == [(False, False)] * 2
    assert "shorter than the long window (3600 s)" in unscaled["burn_rates"][0]["note"]
    [scaled] = _evaluate(frame, [spec], duration=600.0, time_scale=60.0)  # windows 60 s/5 s, 360 s/30 s
    fast, slow = scaled["burn_rates"]
    assert fast["evaluated"] and slow["evaluated"] and not fast["pages"] and not slow["pages"]
    assert fast["worst_long"] == pytest.approx(3 / 1200 / 0.001)  # the first whole minute: 2.5x
    assert slow["worst_long"] == pytest.approx(3 / 7200 / 0.001)


def test_a_burst_inside_whole_windows_still_pages_at_the_window_end() -> None:
    # The same run with 30 s of failures at [300, 330): the fast rule pages once a whole
    # 60 s window holds enough of them, and not before the burst began.
    times = np.arange(12_000) * 0.05 + 0.025
    ok = ~((times >= 300) & (times < 330))
    frame = requests_frame(times, np.full(times.size, 10.0), ok=ok)
    [slo] = _evaluate(frame, [SloSpec(name="a", kind="availability", objective=0.999)], duration=600.0,
                      time_scale=60.0)
    fast = slo["burn_rates"][0]
    assert fast["pages"] and 300.0 < fast["first_page_s"] <= 310.0


def test_latency_interval_names_its_basis_and_widens_near_a_knee() -> None:
    # The same 20,000 latencies, once shuffled (independent) and once as an M/D/1 queue at 90% load
    # produced them in time order: the queue's interval rests on far fewer effective requests.
    queue = md1(np.random.default_rng(11), 1, 20_000, 0.9, stationary=True)[0] * 10.0
    shuffled = np.random.default_rng(12).permutation(queue)
    spec = SloSpec(name="p95", kind="latency", percentile=95, threshold_ms=400)
    times = np.arange(20_000) / 100.0
    [ordered] = _evaluate(requests_frame(times, queue, ok=[True] * 20_000), [spec], duration=200.0)
    [independent] = _evaluate(requests_frame(times, shuffled, ok=[True] * 20_000), [spec], duration=200.0)
    assert independent["ci_basis"]["method"] == "batch means"
    assert independent["ci_basis"]["effective_samples"] > 10_000 and independent["trusted"]
    assert ordered["ci_basis"]["effective_samples"] < independent["ci_basis"]["effective_samples"] / 20
    if ordered["trusted"]:
        width = ordered["ci"][1] - ordered["ci"][0]
        assert width > 3 * (independent["ci"][1] - independent["ci"][0])
    else:
        assert ordered["ci"] == [None, None]
        assert "not enough independent data for a P95 at 95%" in ordered["ci_basis"]["note"]


def test_share_interval_widens_when_failures_come_in_bursts() -> None:
    # 1% failed either way: scattered, or in ten bursts of 20 requests
    scattered = np.ones(20_000, dtype=bool)
    scattered[::100] = False
    bursts = np.ones(20_000, dtype=bool)
    for start in range(1_000, 20_000, 2_000):
        bursts[start:start + 20] = False
    spec = SloSpec(name="avail", kind="availability", objective=0.98)
    times = np.arange(20_000) / 100.0
    [plain] = _evaluate(requests_frame(times, np.full(20_000, 10.0), ok=scattered), [spec], duration=200.0)
    [bursty] = _evaluate(requests_frame(times, np.full(20_000, 10.0), ok=bursts), [spec], duration=200.0)
    assert plain["measured"] == bursty["measured"] == pytest.approx(0.99)
    assert bursty["ci_basis"]["effective_samples"] < plain["ci_basis"]["effective_samples"] / 5
    assert bursty["ci"][0] < plain["ci"][0]


def _faulted_run(seed: int, n: int = 30_000) -> tuple[pd.DataFrame, float]:
    """Independent exponential latencies (mean 20 ms) that double inside a fault window from
    100 s to 200 s of a 300 s run, and the true P95 of that mixture."""
    rng = np.random.default_rng(seed)
    intended = np.sort(rng.uniform(0.0, 300.0, n))
    inside = (intended >= 100.0) & (intended < 200.0)
    latency = rng.exponential(20.0, n) * np.where(inside, 2.0, 1.0)
    grid = np.linspace(40.0, 200.0, 160_001)
    above = (2 * np.exp(-grid / 20.0) + np.exp(-grid / 40.0)) / 3
    return requests_frame(intended, latency), float(grid[np.argmin(np.abs(above - 0.05))])


def test_slo_intervals_of_a_run_with_a_fault_are_measured_within_its_stretches() -> None:
    frame, truth = _faulted_run(7)
    specs = [SloSpec(name="p95", kind="latency", percentile=95, threshold_ms=200)]
    [whole] = evaluate_slos(frame, frame["phase"], [], specs, 300.0, 1.0)
    [cut] = evaluate_slos(frame, frame["phase"], [], specs, 300.0, 1.0, faults=[(100.0, 200.0)])
    assert whole["ci_basis"]["method"] == "batch means"
    assert cut["ci_basis"]["method"].startswith("batch means within stretches")
    assert cut["ci_basis"]["effective_samples"] > 2 * whole["ci_basis"]["effective_samples"]
    low, high = cut["ci"]
    assert cut["trusted"] and low <= truth <= high
    assert cut["measured"] == whole["measured"]  # the figure is the whole run's either way


def test_slo_intervals_are_cut_at_phase_edges_too() -> None:
    frame, _ = _faulted_run(8, 9_000)
    events = [{"name": "calm", "start_s": 0.0, "end_s": 100.0}, {"name": "peak", "start_s": 100.0, "end_s": 200.0},
              {"name": "calm", "start_s": 200.0, "end_s": 300.0}]
    spec = SloSpec(name="avail", kind="availability", objective=0.99)
    [slo] = evaluate_slos(frame, frame["phase"], events, [spec], 300.0, 1.0)
    assert slo["ci_basis"]["method"] in ("count", "batch means")  # nothing failed: nothing to measure
    late = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=150)
    [slo] = evaluate_slos(frame, frame["phase"], events, [late], 300.0, 1.0)
    assert slo["ci_basis"]["method"].startswith("batch means within stretches")
    assert [row["phase"] for row in slo["phases"]] == ["calm", "peak", "calm"]
