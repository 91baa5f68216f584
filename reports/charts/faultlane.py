"""Faults on a time chart: a band per fault in its own colour, named in a lane above the plot.

Names written at the top of the plot itself would run into each other when faults are close
("cold-start-stormgpu-node-lossnetwork-partit…"). In the lane each fault gets a bar over
its window with its name beside it, and a fault whose name would run into an earlier one's drops
to the next row, so every name stays whole however close the faults are.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from rushhour.reports.measures.faults import FaultWindow

__all__ = ["FAULT_COLOURS", "fault_figure", "lane_rows", "shade_faults"]

FAULT_COLOURS = ("#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
LABEL_PT = 7.0
CHAR_WIDTH_EM = 0.62
ROW_INCHES = 0.2
PLOT_WIDTH_SHARE = 0.85


def fault_colour(index: int) -> str:
    return FAULT_COLOURS[index % len(FAULT_COLOURS)]


def lane_rows(faults: Sequence[FaultWindow], span_s: float, width_in: float) -> list[int]:
    """A row per fault: the first whose previous bar and name end before this fault starts."""
    points_per_s = width_in * 72.0 * PLOT_WIDTH_SHARE / max(span_s, 1e-9)
    ends: list[float] = []
    rows = []
    for fault in faults:
        label_s = (len(fault.name) * CHAR_WIDTH_EM * LABEL_PT + 6.0) / points_per_s
        reach = max(fault.end_s, fault.start_s + label_s)
        row = next((i for i, end in enumerate(ends) if end < fault.start_s), len(ends))
        if row == len(ends):
            ends.append(reach)
        else:
            ends[row] = reach
        rows.append(row)
    return rows


def fault_figure(figsize: tuple[float, float], faults: Sequence[FaultWindow],
                 span: tuple[float, float]) -> tuple[Figure, Axes]:
    """A figure with the plot axes and, when there are faults, the named lane above it."""
    if not faults:
        figure, axes = plt.subplots(figsize=figsize)
        return figure, axes
    rows = lane_rows(faults, span[1] - span[0], figsize[0])
    n_rows = max(rows) + 1
    lane_in = ROW_INCHES * n_rows + 0.05
    figure = plt.figure(figsize=(figsize[0], figsize[1] + lane_in))
    grid = figure.add_gridspec(2, 1, height_ratios=(lane_in, figsize[1]), hspace=0.04)
    lane = figure.add_subplot(grid[0])
    axes = figure.add_subplot(grid[1], sharex=lane)
    _draw_lane(lane, faults, rows, n_rows)
    shade_faults(axes, faults)
    return figure, axes


def _draw_lane(lane: Axes, faults: Sequence[FaultWindow], rows: list[int], n_rows: int) -> None:
    for index, (fault, row) in enumerate(zip(faults, rows)):
        y = n_rows - 1 - row
        colour = fault_colour(index)
        lane.broken_barh([(fault.start_s, fault.end_s - fault.start_s)], (y + 0.15, 0.7),
                         facecolors=colour, alpha=0.35, lw=0)
        lane.text(fault.start_s, y + 0.5, " " + fault.name, fontsize=LABEL_PT, color=colour,
                  va="center", ha="left", fontweight="bold", clip_on=False)
    lane.set_ylim(0, n_rows)
    lane.set_yticks([])
    lane.tick_params(axis="x", labelbottom=False, length=0)
    for side in ("top", "right", "left", "bottom"):
        lane.spines[side].set_visible(False)


def shade_faults(axes: Axes, faults: Sequence[FaultWindow]) -> None:
    """A translucent band per fault in its lane colour, so cause sits next to effect."""
    for index, fault in enumerate(faults):
        axes.axvspan(fault.start_s, fault.end_s, color=fault_colour(index), alpha=0.12, lw=0)
