"""The TTFT / TPOT over time chart of a streaming run (P50 and P99 per time bin)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rushhour.reports.charts.plotting import Chart, missing_chart, time_chart
from rushhour.reports.charts.timeseries import bin_width
from rushhour.reports.estimate.intervals import grouped_percentiles
from rushhour.reports.measures.faults import FaultWindow
from rushhour.reports.measures.streaming import has_streaming
from rushhour.reports.rundata.attempts import attempt_values
from rushhour.reports.schema import SloSpec

__all__ = ["stream_charts", "stream_series"]


def stream_series(requests: pd.DataFrame, duration_s: float) -> pd.DataFrame:
    """Per time bin (by intended send, the bins of the latency chart): P50 and P99 of TTFT and
    TPOT over attempted requests (NaN where a bin has none)."""
    width = bin_width(duration_s)
    n_bins = max(1, int(np.ceil(duration_s / width)))
    intended = requests["intended_s"].to_numpy(dtype=float)
    groups = np.minimum(np.floor(np.nan_to_num(intended, nan=-1.0) / width), n_bins - 1).astype(np.int64)
    out = pd.DataFrame({"t_s": np.arange(n_bins) * width})
    for column in ("ttft_ms", "tpot_ms"):
        values = attempt_values(requests, column)
        for p in (50, 99):
            out[f"{column}_p{p}"], _ = grouped_percentiles(groups, values, p, n_bins)
    return out


def stream_charts(requests: pd.DataFrame, duration_s: float, faults: Sequence[FaultWindow],
                  slos: list[SloSpec]) -> list[Chart]:
    """The chart, or nothing for a run without streamed answers."""
    if not has_streaming(requests):
        return []
    if requests["ttft_ms"].isna().all():
        return [missing_chart("ttft_tpot", "TTFT and TPOT over time", "No answer was streamed (stream: false), so "
                              "there is no first-token time to draw; output tokens are in the streaming table.")]
    series = stream_series(requests, duration_s)
    ttft = next((s for s in slos if s.kind == "ttft" and s.priority is None and s.phase is None), None)
    lines = {f"{name} P{p}": series[f"{column}_p{p}"].to_numpy()
             for column, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT")) for p in (50, 99)}
    return [time_chart("ttft_tpot", "TTFT and TPOT over time (P50 / P99 per bin)", "ms (log)", series["t_s"].to_numpy(),
                       lines, faults, hline=(float(ttft.threshold_ms or 0), f"SLO {ttft.name}") if ttft else None,
                       log_y=True)]
