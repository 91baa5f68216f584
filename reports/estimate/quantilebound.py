"""Is a percentile within its threshold? A one-sided bound on the percentile itself, its standard
error from the density at the percentile and the dependence of the requests around it.

The window's percentile xi (nearest rank) is the centre. Its standard error follows Bahadur's
representation: the share of requests past xi has the variance p(1 - p) / n_eff, with n_eff the
requests over their design effect, and a share moves the percentile by the slope of the quantile
function there, (Q(p + h) - Q(p - h)) / 2h read off the window's own order statistics, h at
least `BANDWIDTH` and at least one standard error of the share; and the slope is at least the
mean slope from the pilot percentile up to xi (a latency tail steepens, so a plateau of tied
latencies at xi cannot make the error vanish). The design effect is the largest of the
batch-means measurements (`rushhour.reports.estimate.blocks.dependence`) on the indicator "past
xi" and on the indicator "past the percentile 4 points lower" (the P95 for a P99, common enough
to show how slow requests cluster), and of the step's own pilot design effect
(`rushhour.reports.estimate.sequential.design_effect`), so requests that queue together count
as fewer. The bound is taken on the log scale, xi exp(z se / xi): a percentile cannot go below
zero and its spread grows with it.

Unlike a share of late requests over the same effective sample size, the bound uses how far
below the threshold the latencies sit: a window whose P99 is 60 ms against 100 ms, with no late
request, passes although its requests queue together. It is trusted only where its normal
approximation can hold: the share's standard error at most the share past the percentile
itself (99 effective requests for a P99, 19 for a P95), and blocks that outlast the requests'
memory (`Dependence.outlasts_blocks` false); elsewhere the bound is infinite. An unknown request
(still in flight) counts as infinitely slow. docs/concepts/confidence.md (capacity part) shows,
on simulated steps and whole searches, why this rule: sectioning (the spread of batch
percentiles) understated a window's spread two- to threefold near a knee, and the bound alone,
without the share test beside it, called "met" wrongly in up to a third of short windows just
past a knee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from rushhour.reports.estimate.blocks import dependence, least_effective
from rushhour.reports.estimate.sequential import ALPHA, LOOKS, LookCall, look_call, share_calls

__all__ = ["BANDWIDTH", "METHOD", "PercentileBound", "percentile_bound", "percentile_look"]

BANDWIDTH = 0.005
"""The least probability half-width h of the quantile function's slope (Q(0.995) - Q(0.985) for a
P99); h widens to one standard error of the share when that is larger, so the slope is read over
the span the share itself may move, and a plateau of tied latencies cannot make it zero."""
PILOT_SPAN = 0.04
"""The pilot level sits this far below the percentile (the P95 for a P99), where requests past it
are common enough to show how the slow ones cluster."""
METHOD = "percentile bound"
"""The method named beside a decision made here."""


@dataclass(frozen=True)
class PercentileBound:
    """A percentile's one-sided upper bound: `centre` the window's percentile, `standard_error`
    its standard error (ms), `effective` the requests counted as independent, `upper` the bound
    at error `level` (inf when an unknown or failed request could reach the percentile)."""

    centre: float
    standard_error: float
    effective: float
    level: float
    upper: float

    def within(self, threshold: float) -> bool:
        return bool(self.upper <= threshold)


def _rank(q: float, n: int) -> int:
    return min(n, max(1, math.ceil(round(q * n, 9))))


def percentile_bound(values: np.ndarray, percentile: float, level: float, *, effect: float = 1.0) -> PercentileBound:
    """The one-sided upper bound, at error `level`, of the `percentile` of `values` (send order;
    +inf for a request unknown or failed); `effect` is a design effect measured elsewhere that
    the bound must honour at least."""
    values = np.asarray(values, dtype=float)
    n = values.size
    if n < 2:
        return PercentileBound(math.inf, math.inf, float(n), level, math.inf)
    q = percentile / 100.0
    ordered = np.sort(values)
    centre = float(ordered[_rank(q, n) - 1])
    pilot = float(ordered[_rank(q - PILOT_SPAN, n) - 1])
    seen = least_effective(dependence((values > centre).astype(float)), dependence((values > pilot).astype(float)))
    effective = min(seen.effective, n / max(effect, 1.0))
    share_error = math.sqrt(q * (1.0 - q) / effective)
    width = max(BANDWIDTH, share_error)
    top, bottom = min(q + width, 1.0), max(q - width, 0.0)
    high, low = float(ordered[_rank(top, n) - 1]), float(ordered[_rank(bottom, n) - 1])
    if not (np.isfinite(high) and centre > 0) or seen.outlasts_blocks or share_error > 1.0 - q:
        return PercentileBound(centre, math.inf, effective, level, math.inf)
    slope = max((high - low) / (top - bottom), (centre - pilot) / PILOT_SPAN)
    error = slope * share_error
    upper = centre * math.exp(float(special.ndtri(1.0 - level)) * error / centre)
    return PercentileBound(centre, error, effective, level, upper)


def percentile_look(bad_sure: np.ndarray, unknown: np.ndarray, values: np.ndarray, percentile: float,
                    threshold: float, *, look: int, looks: int = LOOKS, score: np.ndarray | None = None,
                    floor: float = -np.inf, met_error: float = ALPHA) -> tuple[LookCall, PercentileBound]:
    """Look `look` of `looks` at one window (send order) of a percentile objective.

    "Met" is shown two ways, each spending half of `met_error` over the looks (so both together
    are wrong at most `met_error`): the late share's upper bound over the effective sample size
    (`rushhour.reports.estimate.sequential.look_call`, every unknown request late), or the
    distribution-free count (that bound over the requests counted as independent) together with
    `percentile_bound` of `values` (each request's latency, +inf where unknown or failed) within
    `threshold`. "Missed" is the late share's lower bound over the effective sample size, at ALPHA.
    """
    allowed = 1.0 - percentile / 100.0
    call = look_call(bad_sure, unknown, allowed, look=look, looks=looks, score=score, floor=floor,
                     met_error=met_error / 2.0)
    high = int(np.sum(np.asarray(bad_sure, dtype=bool) | np.asarray(unknown, dtype=bool)))
    counted, _, _, _ = share_calls(np.array([high]), np.array([high]), int(np.size(bad_sure)), allowed, np.ones(1),
                                   call.level, call.met_level)
    bound = percentile_bound(values, percentile, call.met_level, effect=float(np.asarray(call.effect).reshape(-1)[0]))
    met = np.asarray(call.met, dtype=bool).reshape(-1) | (np.asarray(counted, dtype=bool).reshape(-1)
                                                          & bound.within(threshold))
    return replace(call, met=met & ~np.asarray(call.missed, dtype=bool).reshape(-1)), bound
