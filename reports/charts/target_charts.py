"""The target's own metrics drawn beside rushhour's: recognised vLLM/TGI/Triton/SGLang series and
the samples the scenario names, each on the run's clock with the fault windows and steady windows.

A run without `target.metrics_url` adds no chart; one whose scrapes all failed shows a note
saying so, so the reader knows the server's side was asked for and not seen.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rushhour.kernel.contract import TARGET_METRICS_FILE
from rushhour.reports.charts.plotting import Chart, missing_chart, time_chart
from rushhour.reports.measures.faults import FaultWindow
from rushhour.reports.measures.targetmetrics import CHARTS, named_series, recognised_series
from rushhour.reports.rundata.results import RunData

NO_SAMPLES = (f"{TARGET_METRICS_FILE} holds no sample (every scrape of the target's metrics failed; "
              "events.jsonl says why), so the target's own view cannot be drawn.")


def target_charts(run: RunData, faults: Sequence[FaultWindow],
                  steady: Sequence[tuple[float, float]] = ()) -> list[Chart]:
    """The recognised charts the target fed, then one chart per scenario-named sample."""
    if not run.scenario.target.metrics_url and run.target_metrics is None:
        return []
    frame = run.target_metrics
    if frame is None or frame.empty:
        return [missing_chart("target_metrics", "Target's own metrics", NO_SAMPLES)]
    charts = [_chart(key, CHARTS[key][0], CHARTS[key][1], lines, faults, steady)
              for key, lines in sorted(recognised_series(frame).items(), key=lambda item: list(CHARTS).index(item[0]))]
    for name in run.scenario.target.metrics:
        lines = named_series(frame, name)
        key, title = f"target_{name}", f"Target metric {name}"
        charts.append(_chart(key, title, name, lines, faults, steady) if lines else
                      missing_chart(key, title, f'The target published no sample named "{name}".'))
    if not charts:
        charts.append(missing_chart("target_metrics", "Target's own metrics",
                                    "No recognised vLLM, TGI, Triton or SGLang series and no named metric "
                                    "was found; name the samples to chart in target.metrics."))
    return charts


def _chart(key: str, title: str, ylabel: str, lines: dict[str, pd.Series], faults: Sequence[FaultWindow],
           steady: Sequence[tuple[float, float]]) -> Chart:
    """Lines on one shared time axis (the union of their scrape times)."""
    index = pd.Index(sorted(set().union(*(series.index for series in lines.values()))), dtype=float)
    aligned = {label: series.reindex(index).to_numpy(float) for label, series in lines.items()}
    return time_chart(key, title, ylabel, np.asarray(index, dtype=float), aligned, faults, step=True, steady=steady)
