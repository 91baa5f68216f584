"""Long documents sent through the jobs API: how soon the reader saw text, and the whole of it.

Both times run from the intended send (coordinated-omission free), over ok rows only: a job
that failed or timed out has no full-document time to compare its first segment with.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.estimate.intervals import percentile_of

DOCUMENT_PERCENTILES = (50.0, 95.0)


def documents_section(requests: pd.DataFrame) -> dict[str, Any] | None:
    """The summary's `documents` block, or None when no row went through the jobs API."""
    jobs = requests.loc[requests["via"].to_numpy() == "job"]
    if jobs.empty:
        return None
    ok = jobs.loc[jobs["ok"].to_numpy()]
    first = ok["first_segment_ms"].to_numpy(dtype=float)
    full = ok["latency_ms"].to_numpy(dtype=float)
    return {
        "count": len(jobs),
        "ok": len(ok),
        "failed": int(len(jobs) - len(ok)),
        "timeouts": int((jobs["error"].to_numpy() == "timeout").sum()),
        "chars_p50": _percentiles(ok["chars"].to_numpy(dtype=float))["p50"],
        "first_segment_ms": _percentiles(first),
        "full_document_ms": _percentiles(full),
    }


def _percentiles(values: np.ndarray) -> dict[str, Any]:
    """Nearest-rank P50 and P95 (None when there are no samples) and the sample count."""
    result: dict[str, Any] = {f"p{p:g}": percentile_of(values, p).value for p in DOCUMENT_PERCENTILES}
    result["samples"] = int(np.count_nonzero(~np.isnan(values)))
    return result
