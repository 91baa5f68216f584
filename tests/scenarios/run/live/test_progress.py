"""Live stats: the progress line and the stop conditions judge the rows seen so far."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rushhour.scenarios.run.live.progress import RunningTally, progress_line
from rushhour.scenarios.run.stopping import stop_reason
from rushhour.scenarios.spec.model import StopCondition


def _parts(done: np.ndarray, status: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"intended_s": done - 0.1, "done_s": done, "status": status})


def test_live_stats_stop_condition_fires_on_sustained_errors() -> None:
    stats = RunningTally()
    t = np.arange(0.0, 20.0, 0.1)
    stats.add(_parts(t, np.where(t < 8.0, 200, 503)))
    rule = [StopCondition(error_rate_over=0.5, for_s=10)]
    assert stop_reason(stats, rule, 12.0) is None  # 40 % of the last 10 s failed
    reason = stop_reason(stats, rule, 19.9)
    assert reason is not None and "error rate 100%" in reason


def test_live_stats_needs_enough_samples_and_time() -> None:
    stats = RunningTally()
    stats.add(_parts(np.array([1.0, 2.0]), np.array([0, 0])))
    rule = [StopCondition(error_rate_over=0.5, for_s=1)]
    assert stop_reason(stats, rule, 2.0) is None  # two failures are not a trend
    assert stop_reason(stats, [StopCondition(error_rate_over=0.1, for_s=10)], 5.0) is None


def test_progress_line_reports_counts_rate_and_p99() -> None:
    stats = RunningTally()
    stats.add(_parts(np.linspace(0.5, 5.0, 50), np.full(50, 200)))
    line = progress_line(stats, elapsed_s=5.0, total_s=30.0, scheduled=100)
    assert "[    5/30 s] 50/100 done" in line and "10.0 req/s" in line and "P99 100 ms" in line
