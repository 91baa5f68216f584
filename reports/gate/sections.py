"""One baseline run: the noise of the percentile ratio read from the two runs' own time sections.

With two or more baseline runs the gate holds its interval to the runs' own spread
(`rushhour.reports.gate.runnoise`). One run has no spread to show, and the bootstrap over
requests alone treats a queue's neighbouring requests as independent: on the bench it raises
same-code false alarms at 3.2% where 1.25% is stated. Here each run's compared requests
are cut, in schedule order, into `SECTIONS` consecutive sections; section s gives its own log
ratio d_s = log P(current, s) - log P(baseline, s) (the same requests in both runs when paired).
Sections long enough to outlast the queue's memory are nearly independent, so the standard
deviation of the d_s over sqrt(SECTIONS) is the standard error of the whole runs' log ratio
however the requests depend on one another inside a section (sectioning: Asmussen and Glynn,
*Stochastic Simulation*, 2007, III.5), and the interval is Student t on SECTIONS - 1 degrees of
freedom around it. A section's percentile rests on an eighth of the requests, so its spread
overstates the whole run's a little: the rule errs on the safe side. A run too short for a
request past the percentile in each of 8 sections is cut into fewer, down to 4.

What one run cannot show is a run's own effect (a noisy neighbour for a whole run, another node
placement): that needs two or more baseline runs, and the method text says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from rushhour.reports.gate.population import log_ratio, tail

__all__ = ["FEWEST_SECTIONS", "SECTIONS", "Sections", "section_half_width"]

SECTIONS = 8
"""Consecutive sections each run is cut into: 7 degrees of freedom, and each section still holds
an eighth of the run (at least two requests past a P99 in a run of 1,600)."""
FEWEST_SECTIONS = 4
"""A run too short for `SECTIONS` sections with a request past the percentile in each is cut
into fewer, down to this many (3 degrees of freedom: a wide interval, but an honest one)."""


@dataclass(frozen=True)
class Sections:
    """The half-width on the log scale and how many sections it rests on."""

    half_width: float
    sections: int


def section_half_width(current: np.ndarray, baseline: np.ndarray, percentile: float,
                       confidence: float) -> Sections | None:
    """Half-width, on the log scale, of the two-sided `confidence` interval of log(P current / P
    baseline) from the spread of the sections' log ratios, on as many sections as the runs allow
    (`SECTIONS` down to `FEWEST_SECTIONS`, one request past the percentile in each); None when
    even those are too many or a section's tail is failures. Arrays are in schedule order;
    paired arrays are the same requests."""
    shortest = min(current.size, baseline.size) * (1.0 - percentile / 100.0)
    count = min(SECTIONS, math.floor(round(shortest, 9)))
    if count < FEWEST_SECTIONS:
        return None
    ratios = []
    for cur, base in zip(np.array_split(current, count), np.array_split(baseline, count), strict=True):
        top_cur, top_base = tail(cur, percentile), tail(base, percentile)
        if top_cur is None or top_base is None or not math.isfinite(top_cur) or not math.isfinite(top_base):
            return None
        ratios.append(float(log_ratio(top_cur, top_base)))
    side = (1.0 - confidence) / 2.0
    spread = float(np.std(ratios, ddof=1)) / math.sqrt(count)
    return Sections(float(special.stdtrit(count - 1, 1.0 - side)) * spread, count)
