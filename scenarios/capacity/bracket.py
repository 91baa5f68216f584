"""Where a first search starts, from the target's saturated throughput (`rushhour.scenarios.capacity.throughput`).

A search bracketed from the scenario's whole range spends most of its steps far from the knee:
doubling up from the lowest rate that can show every SLO met, then bisecting back. The
saturated throughput X (what the service completes with every slot busy) bounds the knee from
above, and how far below it the knee lies depends on how much queueing the SLOs allow: a P99 of
500 ms on a queue that completes 40 answers/s leaves little room (the long-run truth is 87% of
X), a P99 of 2 s at 50 answers/s a great deal (promo-day's calibrations found 0.8 to 1.5 of the probed X).
`knee_share` estimates it from X and the thresholds alone, and the search starts one move
(one precision) above that estimate and moves by one precision at a time. The two ways of
missing the knee do not cost the same: a step above the knee usually ends within seconds, as soon
as its last look can no longer pass, while a step that passes runs its whole window. Started on
the knee or one move above it, the search takes three steps (a failure, a pass one move below it,
the confirmation; or a pass, a failure, the confirmation); started one move below it, it pays a
whole passing step more, and two moves above it, only a failure that ends early.

Each step is as long as the slowest SLO needs at *its* rate, with a margin, no longer: a P99
over 28% of the mix needs 314 requests of that share per step, which takes 60 s at 19 req/s but
20 s at 56. A step above the first rate is therefore shorter than the first, one below it
longer; the lowest rate is where the longest step holds just what each SLO needs, and the search
goes no lower.

A fresh step warms up for 2.5 relaxation times of its queue at the load rate / X
(`rushhour.scenarios.capacity.relaxation`), at least the fixed warm-up and at most its window: a
queue started empty near its knee takes long to fill (`warmup_at`). From `PROBE_ERROR_MOVES` moves
above X, where a pass means the probe read low and rate / X is no load, the warm-up is the fixed one.

Nothing here changes how a step is judged: each step keeps its planned looks, error spending,
effective sample size and the confirmation. The plan only chooses rates, warm-ups and step lengths;
when the knee is not where the estimate put it, the search walks on (and a calibration falls
back to the scenario's whole range with longer steps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rushhour.reports.schema import SloSpec
from rushhour.scenarios.capacity.job import SloFloor
from rushhour.scenarios.capacity.relaxation import RELAXATIONS, fixed_warmup_s, warmup_s
from rushhour.scenarios.capacity.search import SearchSettings

__all__ = ["ProbePlan", "knee_share", "plan_from_throughput", "planned_warmup_s", "step_length", "window_s"]

HIGHEST_START = 0.95
"""The estimated knee is at most this share of the throughput: at X itself no queue is stable."""
QUEUEING_KINDS = ("latency", "ttft")
"""Objectives on a time that includes the wait in the queue (per-token gaps hardly do)."""
TOP_SHARE = 4.0
"""The highest rate the plan may try. No rate above the throughput can be served, but a closed loop
of a few users can read a batching service's throughput low (its batches stay small, or the
machine was busy for the probe's few seconds): once a step passes `PROBE_ERROR_MOVES` moves above
the throughput, the search's growth squares with each pass (1.1, 1.21, 1.46, 2), so a probe that read
half the truth costs two or three more steps in the same search, and only a search whose every
rate up to here passed is searched again (widened, with the calibration's fixed steps)."""
MARGIN = 1.15
"""A step holds this many times the requests each SLO needs at its rate, so that a pass near the
knee survives the chance shortfall of an SLO's count (a 28% share of 1,250 requests varies by
about 4.5%) and latencies that cluster a little (an effective sample size down to 1/1.15 of the
count). A longer margin buys little: one bad request already needs half as many again."""
PROBE_ERROR_MOVES = 2
"""How many moves (precisions) above the throughput a pass may lie before the probe is taken to
have read low and the climb speeds up: promo-day's calibrations found their capacity at 0.8 to 1.5
times the probed throughput, so a pass up to two moves above X says nothing yet about the probe."""
SHORTEST_STEP_S = 15.0
LONGEST_STEP_S = 60.0
GROWTH_EDGE = 0.999
"""Growth a hair under 1 + precision, so one step up or down is already narrow enough."""


def knee_share(throughput_rps: float, slos: Sequence[SloSpec]) -> float:
    """The share of the throughput at which the tightest queueing SLO is estimated to give way.

    Kingman's heavy-traffic law: with the bottleneck completing X per second at utilisation rho,
    the wait in the queue is about exponential with mean rho / (1 - rho) / X, taking service
    times as variable as Poisson arrivals (cautious for a model's near-fixed batch times). Its
    p-quantile, ln(1 / (1 - p)) times the mean, stays within the threshold T while
    rho / (1 - rho) <= q = T X / ln(1 / (1 - p)), so the knee is q / (1 + q) of X. Leaving the
    service time out of T is the optimistic side, which the cautious variability offsets: 0.81
    on the M/D/c queues of the ground-truth tests (truth 0.87 and 0.86), 0.96 for promo-day's
    paid P99 of 2 s (measured 0.8 to 1.5). Capped at HIGHEST_START (also without such an SLO).
    """
    shares = [HIGHEST_START]
    for slo in slos:
        if slo.kind in QUEUEING_KINDS and slo.threshold_ms and 0 < slo.allowed_bad_share < 1:
            q = slo.threshold_ms / 1000.0 * throughput_rps / math.log(1.0 / slo.allowed_bad_share)
            shares.append(q / (1.0 + q))
    return min(shares)


@dataclass(frozen=True)
class ProbePlan:
    """A search's rates and step lengths from a measured throughput."""

    throughput_rps: float
    start_rps: float
    measure_s: float
    """The first step's window; `measure_at` gives any rate's."""
    settings: SearchSettings
    floors: tuple[SloFloor, ...] = ()
    longest_s: float = LONGEST_STEP_S

    def measure_at(self, rate_rps: float) -> float:
        """Seconds of window for a step at `rate_rps`."""
        return window_s(list(self.floors), rate_rps, self.longest_s)

    def warmup_at(self, rate_rps: float) -> float:
        """Seconds of warm-up for a fresh step at `rate_rps` (`planned_warmup_s`)."""
        return planned_warmup_s(rate_rps, self.throughput_rps, self.measure_at(rate_rps), precision=self.settings.precision)

    def as_dict(self) -> dict[str, float]:
        return {"throughput_rps": round(self.throughput_rps, 2), "start_rps": round(self.start_rps, 2),
                "min_rps": round(self.settings.min_rps, 2), "max_rps": round(self.settings.max_rps, 2),
                "growth": round(self.settings.growth, 4), "step_duration_s": round(self.measure_s, 1),
                "warmup_relaxations": RELAXATIONS}


def planned_warmup_s(rate_rps: float, throughput_rps: float, window: float, *, precision: float) -> float:
    """A fresh step's warm-up in a search planned from `throughput_rps` at `precision`, its window
    `window` seconds long: scaled to its queue's relaxation time at the load rate / throughput
    (`rushhour.scenarios.capacity.relaxation`), at most the window; the fixed one from
    `PROBE_ERROR_MOVES` moves above the throughput, where a rate says nothing of the load (a pass
    there is taken to mean that the probe read low)."""
    if rate_rps >= throughput_rps * (1.0 + precision * GROWTH_EDGE) ** PROBE_ERROR_MOVES:
        return fixed_warmup_s(window)
    return warmup_s(rate_rps, throughput_rps, window)


def step_length(floors: list[SloFloor], rate_rps: float) -> float:
    """Seconds of window in which every SLO's scope reaches the requests it needs at `rate_rps`."""
    return max((f.needed / (f.share * rate_rps) for f in floors if f.share > 0), default=0.0)


def window_s(floors: list[SloFloor], rate_rps: float, longest_s: float = LONGEST_STEP_S) -> float:
    """A step's window at `rate_rps`: MARGIN x what every SLO needs, at least SHORTEST_STEP_S."""
    return float(min(max(math.ceil(MARGIN * step_length(floors, rate_rps)), SHORTEST_STEP_S), longest_s))


def plan_from_throughput(throughput_rps: float, floors: list[SloFloor], *, precision: float,
                         slos: Sequence[SloSpec] = (), longest_s: float = LONGEST_STEP_S) -> ProbePlan | None:
    """The search around `throughput_rps`, starting one move above `knee_share` of it for `slos`
    (module doc); None when it gives no usable plan (no throughput, or a knee so low that even the
    longest step cannot show every SLO met near it)."""
    if not floors or not math.isfinite(throughput_rps) or throughput_rps <= 0 or any(f.share <= 0 for f in floors):
        return None
    growth = 1.0 + precision * GROWTH_EDGE
    knee = knee_share(throughput_rps, slos) * throughput_rps
    lowest = step_length(floors, 1.0) / longest_s  # below it even the longest step cannot show every SLO met
    top = TOP_SHARE * throughput_rps
    if not lowest < knee < top:
        return None
    start = knee * growth
    settings = SearchSettings(min_rps=lowest, max_rps=top, precision=precision, growth=growth,
                              accelerate_above=throughput_rps * growth ** PROBE_ERROR_MOVES)
    return ProbePlan(throughput_rps, start, window_s(floors, start, longest_s), settings, tuple(floors), longest_s)
