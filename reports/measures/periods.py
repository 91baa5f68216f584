"""Before, during and after each fault: P99, error rate and achieved rate, side by side.

The window before and after a fault is a minute of run time; a run shorter than twenty minutes
uses a twentieth of its length instead (at least 5 s), so a three-minute drill compares the
9 s before a fault with the 9 s after it. Requests are placed by their intended send time
(latency and errors) and ok answers by when they arrived (achieved rate), as on the charts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.estimate.intervals import percentile_of
from rushhour.reports.measures.faults import FaultWindow
from rushhour.reports.rundata.attempts import attempt_values

__all__ = ["fault_periods", "period_length"]

PERIOD_S = 60.0
MIN_PERIOD_S = 5.0
RUN_FRACTION = 1 / 20


def period_length(duration_s: float) -> float:
    """A minute, or a twentieth of a shorter run (at least MIN_PERIOD_S)."""
    return float(min(PERIOD_S, max(MIN_PERIOD_S, duration_s * RUN_FRACTION)))


def fault_periods(requests: pd.DataFrame, window: FaultWindow, others: Sequence[FaultWindow],
                  duration_s: float, width_s: float) -> list[dict[str, Any]]:
    """Three rows (before, during, after) for one fault; `others` are named where they overlap."""
    spans = (("before", max(0.0, window.start_s - width_s), window.start_s),
             ("during", window.start_s, window.end_s),
             ("after", window.end_s, min(duration_s, window.end_s + width_s)))
    columns = _Columns.of(requests)
    return [{"period": name, "start_s": lo, "end_s": hi, **columns.measure(lo, hi),
             "overlaps": [o.name for o in others if o is not window and o.start_s < hi and o.end_s > lo]}
            for name, lo, hi in spans]


class _Columns:
    """The request columns a period needs, read once per fault."""

    def __init__(self, intended: np.ndarray, done: np.ndarray, ok: np.ndarray, latency: np.ndarray) -> None:
        self.intended, self.done, self.ok, self.latency = intended, done, ok, latency

    @classmethod
    def of(cls, requests: pd.DataFrame) -> _Columns:
        return cls(requests["intended_s"].to_numpy(dtype=float), requests["done_s"].to_numpy(dtype=float),
                   requests["ok"].to_numpy(dtype=bool), attempt_values(requests))

    def measure(self, lo: float, hi: float) -> dict[str, Any]:
        length = hi - lo
        if length <= 0:
            return {"requests": 0, "p99_ms": None, "p99_samples": 0, "error_rate": None,
                    "offered_rps": None, "achieved_rps": None}
        inside = (self.intended >= lo) & (self.intended < hi)
        arrived = self.ok & (self.done >= lo) & (self.done < hi)
        n = int(inside.sum())
        p99 = percentile_of(self.latency[inside], 99.0)
        return {"requests": n, "p99_ms": p99.value, "p99_samples": p99.samples,
                "error_rate": float((inside & ~self.ok).sum() / n) if n else None,
                "offered_rps": n / length, "achieved_rps": float(arrived.sum()) / length}
