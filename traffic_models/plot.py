"""A PNG of the run's rate curve with phases shaded and events marked."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from rushhour.traffic_models.model import TrafficModel
from rushhour.traffic_models.phases import Phase
from rushhour.traffic_models.window import Window

PHASE_COLOURS = {"warm-up": "#dddddd", "ramp": "#ffe0a0", "peak": "#ffb0a0", "recovery": "#c8e6c9"}


def plot_rate(
    path: Path,
    *,
    model: TrafficModel,
    window: Window,
    curve: tuple[np.ndarray, np.ndarray],
    run_phases: list[Phase],
    counts: tuple[np.ndarray, np.ndarray] | None = None,
) -> Path:
    """Write the figure to `path` and return it."""
    fig, ax = plt.subplots(figsize=(11, 4.5), dpi=100)
    try:
        _shade(ax, run_phases)
        if counts is not None:
            ax.step(counts[0], counts[1], where="post", color="#9e9e9e", lw=0.8, label="scheduled (binned)")
        ax.plot(curve[0], curve[1], color="#1565c0", lw=1.5, label="model rate")
        _mark_events(ax, model, window)
        ax.set_xlabel("run time (compressed seconds)")
        ax.set_ylabel("requests per second")
        ax.set_title(f"{model.name or 'traffic model'}: time scale {window.time_scale:g}")
        ax.set_xlim(0, window.duration_s)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", fontsize=8)
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
    return path


def _shade(ax: plt.Axes, run_phases: list[Phase]) -> None:
    for phase in run_phases:
        colour = PHASE_COLOURS.get(phase.name)
        if colour:
            ax.axvspan(phase.start_s, phase.end_s, color=colour, alpha=0.5, lw=0)


def _mark_events(ax: plt.Axes, model: TrafficModel, window: Window) -> None:
    for event in model.events:
        for name, start, _end in event.marks():
            offset = float(window.to_offset(start))
            if 0 <= offset <= window.duration_s:
                ax.axvline(offset, color="#c62828", ls="--", lw=1)
                ax.annotate(name, (offset, 1.0), xycoords=("data", "axes fraction"),
                            rotation=90, va="top", ha="right", fontsize=8, color="#c62828")
