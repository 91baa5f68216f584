"""Before / during / after a fault (reports/measures/periods.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rushhour.reports.measures.faults import FaultWindow
from rushhour.reports.measures.periods import fault_periods, period_length
from tests.reports.helpers import requests_frame


def test_period_length_is_a_minute_or_a_twentieth_of_a_short_run() -> None:
    assert period_length(3600.0) == 60.0
    assert period_length(180.0) == 9.0
    assert period_length(30.0) == 5.0


def test_fault_periods_measure_each_window_and_name_overlaps() -> None:
    # 10 req/s for 60 s; in 20-30 s every other request fails and takes 1 s.
    times = np.arange(600) / 10.0
    during = (times >= 20) & (times < 30)
    ok = ~(during & (np.arange(600) % 2 == 0))
    frame = requests_frame(times, np.where(during, 1000.0, 50.0), ok=ok)
    fault = FaultWindow("kill", "", 20.0, 30.0, True)
    other = FaultWindow("cut", "", 28.0, 40.0, True)
    before, inside, after = fault_periods(frame, fault, [fault, other], 60.0, 5.0)
    assert (before["start_s"], before["end_s"], after["start_s"], after["end_s"]) == (15.0, 20.0, 30.0, 35.0)
    assert before["requests"] == 50 and before["error_rate"] == 0.0 and before["p99_ms"] == 50.0
    assert inside["error_rate"] == pytest.approx(0.5) and inside["p99_ms"] == 1000.0
    assert inside["offered_rps"] == pytest.approx(10.0)
    # 10/s ok after, plus the 5 slow ok answers from 29-30 s that arrive in 30-31 s.
    assert after["achieved_rps"] == pytest.approx(11.0)
    assert (before["overlaps"], inside["overlaps"], after["overlaps"]) == ([], ["cut"], ["cut"])


def test_fault_periods_after_is_cut_at_the_run_end() -> None:
    frame = requests_frame(np.arange(10.0), [10.0] * 10)
    fault = FaultWindow("kill", "", 5.0, 10.0, False)
    after = fault_periods(frame, fault, [fault], 10.0, 5.0)[2]
    assert after["requests"] == 0 and after["p99_ms"] is None and after["achieved_rps"] is None
