"""Fault names on time charts stay readable when faults are close (reports/charts/faultlane.py)."""

from __future__ import annotations

import numpy as np

from rushhour.reports.charts.faultlane import fault_figure, lane_rows
from rushhour.reports.charts.plotting import time_chart
from rushhour.reports.measures.faults import FaultWindow


def _fault(name: str, start: float, end: float) -> FaultWindow:
    return FaultWindow(name, "", start, end, True)


def test_lane_rows_stagger_close_faults_and_reuse_rows_when_far() -> None:
    faults = [_fault("cold-start-storm", 110, 112), _fault("gpu-node-loss", 131, 150),
              _fault("network-partition", 147, 162)]
    assert lane_rows(faults, 180.0, 9.0) == [0, 1, 0]
    far = [_fault("a", 10, 12), _fault("b", 100, 110)]
    assert lane_rows(far, 180.0, 9.0) == [0, 0]


def test_lane_labels_do_not_overlap_on_the_drawn_figure() -> None:
    faults = [_fault("cold-start-storm", 110, 112), _fault("gpu-node-loss", 113, 115),
              _fault("network-partition", 116, 120)]
    figure, axes = fault_figure((9.0, 3.2), faults, (0.0, 180.0))
    axes.plot([0, 180], [0, 1])
    figure.canvas.draw()
    lane = figure.axes[0]
    boxes = [text.get_window_extent() for text in lane.texts]
    assert [t.get_text().strip() for t in lane.texts] == [f.name for f in faults]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_time_chart_with_faults_still_encodes() -> None:
    x = np.arange(10.0)
    chart = time_chart("k", "t", "y", x, {"a": x}, [_fault("f", 2, 4)])
    assert chart.png_base64
