"""Attempted requests and when they ended: a failed request is a slow request, not a missing one.

A request was *attempted* when it left the generator (it has a send or an end time); one that
never did is *not sent* and stays out of every latency figure, counted on its own. Every attempt
has an end: the answer (any status), the error, or the moment the client gave up. Rows without
one (results written before ends were always stamped, or a client that gave up without
stamping) are taken to have failed at the latest end the data allows: the run's end, or the
last end or send seen if that is later. Their latency is then an upper bound, never a guess
that flatters the service, and `end_imputed` marks them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["attempt_values", "attempted", "fill_missing_ends", "gate_values", "good", "latest_end_s", "not_sent"]


def attempted(requests: pd.DataFrame) -> np.ndarray:
    """Per row: did the request leave the generator (a send or an end time was recorded)?"""
    return (requests["sent_s"].notna() | requests["done_s"].notna()).to_numpy()


def not_sent(requests: pd.DataFrame) -> np.ndarray:
    """Per row: scheduled but never left the generator."""
    return ~attempted(requests)


def attempt_values(requests: pd.DataFrame, column: str = "latency_ms") -> np.ndarray:
    """`column` for attempted rows, NaN for rows never sent (so percentiles skip them)."""
    values = requests[column].to_numpy(dtype=float)
    return np.where(attempted(requests), values, np.nan)


def gate_values(requests: pd.DataFrame, column: str = "latency_ms") -> np.ndarray:
    """`column` for successful attempts, +inf for failed ones, NaN for rows never sent.

    The regression gate's view: a failed request never delivered its answer, so it is slower
    than any answer for every percentile. Counting it at the moment it ended would let a
    regression into fast 429/503 answers lower the tail.
    """
    values = attempt_values(requests, column)
    failed = attempted(requests) & ~requests["ok"].to_numpy(dtype=bool)
    return np.where(failed, np.inf, values)


def good(requests: pd.DataFrame, threshold_ms: float, column: str = "latency_ms") -> np.ndarray:
    """Per row: succeeded *and* `column` (latency by default) within `threshold_ms` (the SRE
    workbook's good event); a row without a value (no token ever came) is not good."""
    values = requests[column].to_numpy(dtype=float)
    return requests["ok"].to_numpy() & (values <= threshold_ms)


def latest_end_s(requests: pd.DataFrame, events: list[dict[str, Any]]) -> float:
    """The latest moment a request could have ended: the run's end or the last time seen."""
    ends = [float(e["duration_s"]) for e in events if e.get("type") == "run_end" and e.get("duration_s")]
    seen = [ends[-1]] if ends else []
    for column in ("done_s", "sent_s", "intended_s"):
        if len(requests) and requests[column].notna().any():
            seen.append(float(requests[column].max()))
    return max(seen) if seen else 0.0


def fill_missing_ends(requests: pd.DataFrame, end_s: float) -> pd.DataFrame:
    """Give every attempted row an end time, latency and service time; flag the imputed ones.

    Rows with an end keep it (latency and service time recomputed only where missing); attempted
    rows without one end at `end_s` and fail (`ok` False, `end_imputed` True).
    """
    frame = requests
    missing = attempted(frame) & frame["done_s"].isna().to_numpy()
    frame["end_imputed"] = missing
    if missing.any():
        frame.loc[missing, "done_s"] = end_s
        frame.loc[missing, "ok"] = False
    done = frame["done_s"].to_numpy(dtype=float)
    for column, start in (("latency_ms", "intended_s"), ("service_ms", "sent_s")):
        derived = (done - frame[start].to_numpy(dtype=float)) * 1000.0
        current = frame[column].to_numpy(dtype=float)
        frame[column] = np.where(np.isnan(current), derived, current)
    return frame
