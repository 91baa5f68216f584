"""Rendering the charts: matplotlib (Agg) figures turned into base64 PNGs for a one-file report.

Each chart function takes aggregated frames, never raw requests, so charts stay cheap and the
aggregation can be tested without drawing anything.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rushhour.reports.charts.faultlane import fault_figure
from rushhour.reports.measures.faults import FaultWindow

FIGSIZE = (9.0, 3.2)
DPI = 90
CDF_POINTS = 2000


@dataclass(frozen=True)
class Chart:
    """A titled chart: a base64 PNG, or None with a note saying why it could not be drawn."""

    key: str
    title: str
    png_base64: str | None
    note: str = ""


def encode(figure: Figure) -> str:
    """PNG bytes of `figure` as base64 text, and the figure closed (pyplot keeps them otherwise)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def time_chart(key: str, title: str, ylabel: str, x: np.ndarray, lines: dict[str, np.ndarray],
               faults: Sequence[FaultWindow], *, hline: tuple[float, str] | None = None,
               step: bool = False, log_y: bool = False, steady: Sequence[tuple[float, float]] = ()) -> Chart:
    """A time chart of several lines sharing an x axis, fault windows shaded and named above,
    steady windows (rushhour.reports.measures.steady) underlined by a green bar along the x axis."""
    figure, axes = fault_figure(FIGSIZE, faults, _span(x))
    for index, (start, end) in enumerate(steady):
        axes.axvspan(start, end, ymin=0.0, ymax=0.03, color="#2ca02c", alpha=0.6,
                     label="steady window" if index == 0 else None)
    for label, y in lines.items():
        if step:
            axes.step(x, y, where="post", label=label, lw=1.2)
        else:
            axes.plot(x, y, label=label, lw=1.2)
    if hline is not None:
        axes.axhline(hline[0], color="black", ls="--", lw=0.8, label=hline[1])
    axes.set_xlabel("run time (s)")
    axes.set_ylabel(ylabel)
    if log_y:
        axes.set_yscale("log")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper right")
    return Chart(key, title, encode(figure))


def missing_chart(key: str, title: str, note: str) -> Chart:
    """A placeholder entry: the report still lists the chart and says what data was absent."""
    return Chart(key, title, None, note)


def cdf_chart(corrected: np.ndarray, uncorrected: np.ndarray) -> Chart:
    """Latency CDF from the intended send time vs from the actual send time (log x axis)."""
    figure, axes = plt.subplots(figsize=FIGSIZE)
    probabilities = np.linspace(0.0, 1.0, CDF_POINTS)
    for label, values in (("corrected (from intended send)", corrected),
                          ("uncorrected (from actual send)", uncorrected)):
        clean = values[~np.isnan(values)]
        if clean.size:
            axes.plot(np.quantile(clean, probabilities, method="inverted_cdf"), probabilities,
                      label=f"{label}, n={clean.size}", lw=1.2)
    axes.set_xscale("log")
    axes.set_xlabel("latency (ms, log)")
    axes.set_ylabel("share of attempted requests")
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=7, loc="lower right")
    return Chart("latency_cdf", "Latency CDF: corrected vs uncorrected", encode(figure))


def length_chart(buckets: pd.DataFrame) -> Chart:
    """Grouped bars of P50/P95/P99 latency per text-length bucket, sample counts on the axis."""
    figure, axes = plt.subplots(figsize=FIGSIZE)
    positions = np.arange(len(buckets))
    for offset, column in zip((-0.27, 0.0, 0.27), ("p50_ms", "p95_ms", "p99_ms")):
        axes.bar(positions + offset, buckets[column].fillna(0), width=0.27,
                 label=column.removesuffix("_ms").upper())
    axes.set_xticks(positions, [f"{b}\nn={n}" for b, n in zip(buckets["bucket"], buckets["samples"])],
                    fontsize=7)
    axes.set_xlabel("text length (characters)")
    axes.set_ylabel("latency (ms)")
    axes.grid(alpha=0.3, axis="y")
    axes.legend(fontsize=7)
    return Chart("latency_by_length", "Latency by text length", encode(figure))


def twin_chart(key: str, title: str, x: np.ndarray, left: pd.DataFrame, left_label: str,
               right: pd.DataFrame, right_label: str, faults: Sequence[FaultWindow]) -> Chart:
    """Per-pool gauges on two y axes (e.g. queue depth left, batch size right)."""
    figure, axes = fault_figure(FIGSIZE, faults, _span(x))
    other = axes.twinx()
    for index, pool in enumerate(left.columns):
        axes.step(x, left[pool].to_numpy(), where="post", lw=1.2, color=f"C{index}",
                  label=f"{left_label} {pool}")
    for index, pool in enumerate(right.columns, start=len(left.columns)):
        other.plot(x, right[pool].to_numpy(), lw=1.0, ls=":", color=f"C{index}",
                   label=f"{right_label} {pool}")
    axes.set_xlabel("run time (s)")
    axes.set_ylabel(left_label)
    other.set_ylabel(right_label)
    axes.grid(alpha=0.3)
    handles = axes.get_legend_handles_labels()
    extra = other.get_legend_handles_labels()
    axes.legend(handles[0] + extra[0], handles[1] + extra[1], fontsize=7, loc="upper right")
    return Chart(key, title, encode(figure))


def _span(x: np.ndarray) -> tuple[float, float]:
    finite = x[np.isfinite(x)] if x.size else x
    return (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
