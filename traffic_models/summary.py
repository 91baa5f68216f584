"""Totals, rates and mix of a schedule, as one JSON-ready dict (the `rushhour traffic` output)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.traffic_models.phases import Phase

OBSERVED_BINS = 500
MIN_BIN_S = 1.0


def summarize(
    frame: pd.DataFrame, *, duration_s: float, curve_rps: np.ndarray, run_phases: list[Phase]
) -> dict[str, Any]:
    """What an SRE checks before a drill: how many requests, how fast at peak, how big, of what."""
    total = int(len(frame))
    unique = int(frame["text_id"].nunique())
    return {
        "total_requests": total,
        "duration_s": _r(duration_s),
        "mean_rps": _r(total / duration_s),
        "peak_rps": _r(float(curve_rps.max()) if curve_rps.size else 0.0),
        "peak_rps_observed": _r(_observed_peak(frame["offset_s"].to_numpy(), duration_s)),
        "total_chars": int(frame["chars"].sum()),
        "mean_chars": _r(float(frame["chars"].mean()) if total else 0.0),
        "unique_texts": unique,
        "repeat_fraction": _r(1.0 - unique / total if total else 0.0),
        "mix": {column: _fractions(frame[column]) for column in ("kind", "priority", "mode")},
        "chars_by_kind": {str(k): int(v) for k, v in frame.groupby("kind", observed=False)["chars"].sum().items()},
        "tenants": int(frame["tenant"].nunique()),
        "phases": _phase_rows(frame, run_phases),
    }


def _observed_peak(offsets: np.ndarray, duration_s: float) -> float:
    """Highest arrival rate over bins of duration/500 (at least 1 s): what the target will feel."""
    width = max(duration_s / OBSERVED_BINS, MIN_BIN_S)
    if offsets.size == 0:
        return 0.0
    counts = np.bincount((offsets // width).astype(np.int64))
    return float(counts.max() / width)


def _fractions(column: pd.Series) -> dict[str, float]:
    counts = column.value_counts(sort=False)
    total = max(int(counts.sum()), 1)
    return {str(name): _r(int(n) / total) for name, n in counts.items()}


def _phase_rows(frame: pd.DataFrame, run_phases: list[Phase]) -> list[dict[str, Any]]:
    offsets = frame["offset_s"].to_numpy()
    starts = np.searchsorted(offsets, [p.start_s for p in run_phases], side="left")
    ends = np.searchsorted(offsets, [p.end_s for p in run_phases], side="left")
    return [
        {"name": p.name, "start_s": _r(p.start_s), "end_s": _r(p.end_s), "requests": int(b - a)}
        for p, a, b in zip(run_phases, starts, ends)
    ]


def _r(value: float) -> float:
    """Rounded so the JSON is byte-identical across platforms for the same seed."""
    return round(float(value), 6)
