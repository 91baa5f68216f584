"""One baseline run: the noise of the percentile ratio read from the two runs' own time sections.

With two or more baseline runs the gate holds its interval to the runs' own spread
(`rushhour.reports.gate.runnoise`). One run has no spread to show, and the bootstrap over
requests alone treats a queue's neighbouring requests as independent: same-code runs were
measured raising false alarms at 3.2% where 1.25% was stated. Here each run's compared requests
are cut, in schedule order, into `SECTIONS` consecutive sections; section s gives its own log
ratio d_s = log P(current, s) - log P(baseline, s) (the same requests in both runs when paired).
Sections long enough to outlast the queue's memory are nearly independent, so the standard
deviation of the d_s over sqrt(SECTIONS) is the standard error of the whole runs' log ratio
however the requests depend on one another inside a section (sectioning: Asmussen and Glynn,
*Stochastic Simulation*, 2007, III.5), and the interval is Student t on SECTIONS - 1 degrees of
freedom around it. A section's percentile rests on an eighth of the requests, so its spread
overstates the whole run's a little: the rule errs on the safe side.

What one run cannot show is a run's own effect (a noisy neighbour for a whole run, another node
placement): that needs two or more baseline runs, and the method text says so.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from rushhour.reports.gate.population import log_ratio, tail

__all__ = ["SECTIONS", "section_half_width"]

SECTIONS = 8
"""Consecutive sections each run is cut into: 7 degrees of freedom, and each section still holds
an eighth of the run (at least two requests past a P99 in a run of 1,600)."""


def section_half_width(current: np.ndarray, baseline: np.ndarray, percentile: float,
                       confidence: float) -> float | None:
    """Half-width, on the log scale, of the two-sided `confidence` interval of log(P current / P
    baseline) from the spread of the sections' log ratios; None when a section holds no finite
    percentile (its tail is failures) or the runs are too short for one request past the
    percentile per section. Arrays are in schedule order; paired arrays are the same requests."""
    ratios = []
    for cur, base in zip(np.array_split(current, SECTIONS), np.array_split(baseline, SECTIONS), strict=True):
        if min(cur.size, base.size) * (1.0 - percentile / 100.0) < 1.0:
            return None
        top_cur, top_base = tail(cur, percentile), tail(base, percentile)
        if top_cur is None or top_base is None or not math.isfinite(top_cur) or not math.isfinite(top_base):
            return None
        ratios.append(float(log_ratio(top_cur, top_base)))
    side = (1.0 - confidence) / 2.0
    spread = float(np.std(ratios, ddof=1)) / math.sqrt(SECTIONS)
    return float(special.stdtrit(SECTIONS - 1, 1.0 - side)) * spread
