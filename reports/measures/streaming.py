"""The streaming section of the summary: TTFT, TPOT, inter-token gaps and output tokens.

All over attempted requests that got a value (a failure before its first token has no TTFT; it
counts against the TTFT objective through the good-events rule, not here). TTFT is from the
intended send time, so it carries the queueing the service caused, like every latency here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.estimate.intervals import summary_percentiles
from rushhour.reports.rundata.attempts import attempt_values

__all__ = ["STREAM_METRICS", "has_streaming", "streaming_section"]

STREAM_METRICS = {
    "ttft_ms": "time to first token (ms, from intended send)",
    "tpot_ms": "time per output token (ms)",
    "itl_p50_ms": "inter-token gap, median per answer (ms)",
    "itl_p99_ms": "inter-token gap, P99 per answer (ms)",
    "itl_max_ms": "inter-token gap, worst per answer (ms)",
}


def has_streaming(requests: pd.DataFrame) -> bool:
    """Whether any request measured a first token or reported output tokens."""
    columns = [c for c in ("ttft_ms", "output_tokens") if c in requests]
    return any(requests[c].notna().any() for c in columns)


def streaming_section(requests: pd.DataFrame) -> dict[str, Any] | None:
    """summary["streaming"]: P50/P95/P99/P99.9 of each metric over the successful answers, with its
    sample count, and token totals."""
    if not has_streaming(requests):
        return None
    metrics = {}
    succeeded = requests["ok"].to_numpy(dtype=bool)
    for column, label in STREAM_METRICS.items():
        # a failed answer's tokens (a cut stream's two, say) are no figure of the served answers
        values = np.where(succeeded, attempt_values(requests, column), np.nan)
        found = summary_percentiles(values)
        metrics[column] = {"label": label, "samples": int(np.count_nonzero(~np.isnan(values))),
                           **{key: p.value for key, p in found.items()}}
    tokens = requests["output_tokens"].to_numpy(dtype=float)
    got = tokens[~np.isnan(tokens)]
    return {"metrics": metrics,
            "output_tokens": {"total": int(got.sum()), "mean": float(got.mean()) if got.size else None,
                              "requests": int(got.size)},
            "streamed": int(requests["ttft_ms"].notna().sum())}
