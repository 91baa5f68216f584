"""Where the warm-up ends: MSER-5 truncation on per-second latency, per phase.

A service that has just started (cold caches, a JIT, an autoscaler catching up) answers slower
for a while; an SLO judged over the whole run mixes that warm-up with the steady behaviour a
capacity plan needs. MSER-5 (White, 1997; Franklin and White, 2008) groups the series into
means of 5 consecutive points and picks the truncation `d` that minimises the standard error of
what remains, sum((Z_j - mean_d)^2) / (m - d)^2. A truncation past half the series means the
series never settled, and no steady window is claimed for it.

Each phase (from the `phase` events, else the whole schedule window) is one series: per-second
mean latency over the attempted requests sent in it, from the intended send, failures at the
moment they ended. The steady window of a phase runs from the truncation point to its end.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from pydantic import ConfigDict

from rushhour.reports.rundata.attempts import attempt_values

BATCH = 5
MIN_BATCHES = 4
"""Fewer than 20 seconds of latency leave too few batch means to tell warm-up from noise."""
METHOD = "MSER-5 on per-second mean latency (from the intended send)"


@dataclass(frozen=True)
class SteadyWindow:
    """One phase's steady stretch, or why none was found (`steady_start_s` None); summary.json's
    steady windows are validated against these fields (a misspelt key is refused)."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    phase: str
    start_s: float
    end_s: float
    steady_start_s: float | None
    warmup_s: float | None
    reason: str | None


def mser5(values: np.ndarray) -> int | None:
    """Points to cut from the start of `values` (a multiple of 5), or None when the minimum falls
    past half the batches (no steady state) or there are too few batches to tell."""
    m = len(values) // BATCH
    if m < MIN_BATCHES:
        return None
    means = values[: m * BATCH].reshape(m, BATCH).mean(axis=1)
    tail_n = np.arange(m, 0, -1, dtype=float)  # points kept for d = 0 .. m-1
    tail_sum = np.cumsum(means[::-1])[::-1]
    tail_sq = np.cumsum((means ** 2)[::-1])[::-1]
    squares = tail_sq - tail_sum ** 2 / tail_n  # sum of squared deviations of the kept batches
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = squares / tail_n ** 2
    statistic[-1] = np.inf  # one batch left has no spread to judge
    d = int(np.argmin(statistic))
    return d * BATCH if d <= m // 2 else None


def per_second(requests: pd.DataFrame, start: float, end: float) -> np.ndarray:
    """Mean latency per second of [start, end) by intended send; empty seconds carry the last
    value (a second without arrivals says nothing new about the latency)."""
    intended = requests["intended_s"].to_numpy(dtype=float)
    latency = attempt_values(requests, "latency_ms")
    keep = (intended >= start) & (intended < end) & ~np.isnan(latency)
    seconds = np.floor(intended[keep] - start).astype(int)
    n = max(int(np.ceil(end - start)), 0)
    means = pd.Series(latency[keep]).groupby(seconds).mean().reindex(range(n))
    return means.ffill().dropna().to_numpy(float)


def steady_windows(requests: pd.DataFrame, phase_events: list[dict[str, Any]],
                   window: tuple[float, float]) -> list[SteadyWindow]:
    """The steady window of every phase (the whole schedule window when no phase was marked)."""
    spans = [(str(e.get("name", "")), float(e["start_s"]), float(e["end_s"])) for e in phase_events
             if e.get("start_s") is not None and e.get("end_s") is not None] or [("", *window)]
    return [_phase_window(requests, name, start, end) for name, start, end in spans]


def _phase_window(requests: pd.DataFrame, name: str, start: float, end: float) -> SteadyWindow:
    series = per_second(requests, start, end)
    cut = mser5(series)
    if cut is None:
        reason = (f"{len(series)} s of latency is too short for MSER-5 (needs {BATCH * MIN_BATCHES} s)"
                  if len(series) < BATCH * MIN_BATCHES else "latency never settled (MSER-5 cut past half the phase)")
        return SteadyWindow(name, start, end, None, None, reason)
    return SteadyWindow(name, start, end, start + cut, float(cut), None)


def steady_mask(intended: np.ndarray, windows: list[SteadyWindow]) -> np.ndarray | None:
    """Requests sent inside a steady window; None when no phase has one."""
    found = [w for w in windows if w.steady_start_s is not None]
    if not found:
        return None
    mask = np.zeros(len(intended), dtype=bool)
    for w in found:
        mask |= (intended >= float(w.steady_start_s or 0.0)) & (intended < w.end_s)
    return mask


def steady_section(windows: list[SteadyWindow]) -> dict[str, Any]:
    """summary.json's `steady`: the method and every phase's window."""
    return {"method": METHOD, "found": any(w.steady_start_s is not None for w in windows),
            "windows": [asdict(w) for w in windows]}
