"""Named phases of a run (warm-up, base, ramp, peak, recovery) in compressed seconds.

Reports slice latency and errors by phase, so every instant of the run belongs to exactly
one phase; where events overlap, peak beats ramp beats recovery beats base.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rushhour.traffic_models.model import TrafficModel
from rushhour.traffic_models.window import Window, resolve_window

if TYPE_CHECKING:
    import pandas as pd

WARM_UP_FRACTION = 0.05
RANK = {"base": 0, "recovery": 1, "ramp": 2, "peak": 3}
LABELS = ["base", "recovery", "ramp", "peak"]


@dataclass(frozen=True)
class Phase:
    """A named stretch [start_s, end_s) of the run, in compressed seconds."""

    name: str
    start_s: float
    end_s: float


def phases(
    model: TrafficModel,
    *,
    time_scale: float = 1.0,
    start_clock_s: float = 0.0,
    duration_s: float | None = None,
) -> list[Phase]:
    """Consecutive phases covering [0, duration] of the run, in order."""
    window = resolve_window(model, time_scale=time_scale, start_clock_s=start_clock_s, duration_s=duration_s)
    return window_phases(model, window)


def window_phases(model: TrafficModel, window: Window) -> list[Phase]:
    """Phases of an already resolved window."""
    edges, labels = _event_segments(model, window)
    offsets = np.asarray(window.to_offset(edges), dtype=np.float64)
    warm_end = WARM_UP_FRACTION * window.duration_s
    raw = [Phase("warm-up", 0.0, warm_end)] + [
        Phase(label, max(float(lo), warm_end), float(hi))
        for label, lo, hi in zip(labels, offsets[:-1], offsets[1:])
        if hi > warm_end
    ]
    return _merged([p for p in raw if p.end_s > p.start_s])


def phase_column(run_phases: list[Phase], offsets: np.ndarray) -> pd.Categorical[str]:
    """The phase of each arrival, as a categorical over the phase names."""
    starts = np.array([p.start_s for p in run_phases])
    index = np.clip(np.searchsorted(starts, offsets, side="right") - 1, 0, len(run_phases) - 1)
    names = list(dict.fromkeys(p.name for p in run_phases))
    codes = np.array([names.index(p.name) for p in run_phases])[index]
    import pandas as pd  # here: a load generator imports this module (through the package) without pandas

    return pd.Categorical.from_codes(codes, categories=pd.Index(names))


def _event_segments(model: TrafficModel, window: Window) -> tuple[np.ndarray, list[str]]:
    """Elementary clock segments of the window and the winning label of each."""
    start, end = window.start_clock_s, window.end_clock_s
    spans = [span for event in model.events for span in event.spans()]
    cuts = [start, end] + [np.clip(t, start, end) for _, lo, hi in spans for t in (lo, hi)]
    edges = np.unique(np.array(cuts, dtype=np.float64))
    if not spans:
        return edges, ["base"] * (edges.size - 1)
    mids = (edges[:-1] + edges[1:]) / 2.0
    lo = np.array([s[1] for s in spans])
    hi = np.array([s[2] for s in spans])
    rank = np.array([RANK[s[0]] for s in spans])
    covered = (mids[:, None] >= lo[None, :]) & (mids[:, None] < hi[None, :])
    best = np.max(np.where(covered, rank[None, :], 0), axis=1)
    return edges, [LABELS[r] for r in best]


def _merged(parts: list[Phase]) -> list[Phase]:
    merged: list[Phase] = []
    for part in parts:
        if merged and merged[-1].name == part.name:
            merged[-1] = Phase(part.name, merged[-1].start_s, part.end_s)
        else:
            merged.append(part)
    return merged
