"""Where a first search starts, from the target's saturated throughput (`scenarios.capacity.throughput`).

A search bracketed from the scenario's whole range spends most of its steps far from the knee:
doubling up from the lowest rate that can show every SLO met, then bisecting back. The
saturated throughput X (what the service completes with every slot busy) bounds the knee from
above, and a service's SLO capacity lies a little below it (the long-run truth is 87% and 86%
of it on the ground-truth tests' two M/D/c queues), so the search starts at `START_SHARE` x X and moves by one precision at a
time: in the common case three steps (a pass, a failure one precision above or below it, the
confirmation). A step is as long as the slowest SLO needs at the first rate, with a margin, no
longer: a P99 over 28% of the mix needs 314 requests of that share per step, which takes 60 s
at 19 req/s but 20 s at 58. Its lowest rate is where that length holds exactly what each SLO
needs; the search goes no lower.

Nothing here changes how a step is judged: each step keeps its planned looks, error spending,
effective sample size and the confirmation. The plan only chooses rates and a step length;
when the knee is not where the probe put it, the search walks on (and a calibration falls
back to the scenario's whole range with longer steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scenarios.capacity.job import SloFloor
from scenarios.capacity.search import SearchSettings

__all__ = ["ProbePlan", "plan_from_throughput", "step_length"]

START_SHARE = 0.8
"""The first rate as a share of the saturated throughput."""
TOP_SHARE = 1.1
"""The highest rate the plan may try: a little above the throughput, which no rate beyond can be served at."""
MARGIN = 1.25
"""A step holds this many times the requests each SLO needs at the first rate (a pass near the
knee must survive a bad request or two, and latencies that cluster)."""
SHORTEST_STEP_S = 15.0
LONGEST_STEP_S = 60.0
GROWTH_EDGE = 0.999
"""Growth a hair under 1 + precision, so one step up or down is already narrow enough."""


@dataclass(frozen=True)
class ProbePlan:
    """A search's rates and step length from a measured throughput."""

    throughput_rps: float
    start_rps: float
    measure_s: float
    settings: SearchSettings

    def as_dict(self) -> dict[str, float]:
        return {"throughput_rps": round(self.throughput_rps, 2), "start_rps": round(self.start_rps, 2),
                "min_rps": round(self.settings.min_rps, 2), "max_rps": round(self.settings.max_rps, 2),
                "growth": round(self.settings.growth, 4), "step_duration_s": round(self.measure_s, 1)}


def step_length(floors: list[SloFloor], rate_rps: float) -> float:
    """Seconds of window in which every SLO's scope reaches the requests it needs at `rate_rps`."""
    return max((f.needed / (f.share * rate_rps) for f in floors if f.share > 0), default=0.0)


def plan_from_throughput(throughput_rps: float, floors: list[SloFloor], *, precision: float,
                         longest_s: float = LONGEST_STEP_S) -> ProbePlan | None:
    """The search around `throughput_rps`; None when it gives no usable plan (no throughput, or
    a knee so low that even the longest step cannot show every SLO met near it)."""
    if not floors or not math.isfinite(throughput_rps) or throughput_rps <= 0 or any(f.share <= 0 for f in floors):
        return None
    growth = 1.0 + precision * GROWTH_EDGE
    start = START_SHARE * throughput_rps
    measure_s = min(max(math.ceil(MARGIN * step_length(floors, start)), SHORTEST_STEP_S), longest_s)
    lowest = step_length(floors, 1.0) / measure_s  # below it a step of that length cannot show every SLO met
    top = TOP_SHARE * throughput_rps
    if not lowest < start < top:
        return None
    settings = SearchSettings(min_rps=lowest, max_rps=top, precision=precision, growth=growth)
    return ProbePlan(throughput_rps, start, float(measure_s), settings)
