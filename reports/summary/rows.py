"""The rows of summary.json's `slos` and `faults` lists as typed models.

An SLO row's keys depend on its kind, and each producer writes them in its own order (latency
kinds in `rushhour.reports.measures.slos.measure`, shares in the same module, goodput in
`rushhour.reports.measures.goodput`, drift in `rushhour.reports.measures.drift`); a model writes
its fields in the order they are declared, so each kind has a row model of its own, told apart by
`kind`. Keys added on the way (the steady-only verdict from `rushhour.reports.measures.steady_slos`,
`implicit` from `rushhour.reports.summary.aggregate`, `too_tight` from
`rushhour.reports.measures.overhead`) come last, in the order they are added. A per-phase row is
its kind's verdict after the phase's name and span.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from rushhour.reports.measures.burn import BurnRule

__all__ = ["DriftSloRow", "IntervalBasis", "FaultPeriodRow", "FaultRow", "GoodputPhaseRow", "GoodputSloRow",
           "LatencyPhaseRow", "LatencySloRow", "RecoveryRule", "SharePhaseRow", "ShareSloRow", "SloRow",
           "SteadyStateOutcome", "WholeRunVerdict"]

Bound = list[float | None]
"""A confidence interval, [low, high]; either end None when not measured."""


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntervalBasis(_Row):
    """What an interval rests on (`rushhour.reports.measures.slos.interval_basis`): requests in
    time order are not independent, so each interval names its method ("batch means", "batch
    means within stretches of steady load (phases, fault windows), combined" when the run's load
    changed at known edges, or "count" when nothing varied), the effective number of independent requests behind it, the block
    length (requests) and the lag-1 correlation of block statistics, and, when the data could not
    carry the statement, the sentence that says so instead of an interval."""

    method: str
    effective_samples: float
    block_requests: int
    lag1: float | None
    note: str | None


class WholeRunVerdict(_Row):
    """A steady-only SLO's verdict over the whole run, shown beside it (`rushhour.reports.measures.steady_slos`)."""

    kind: str
    measured: float | None
    met: bool
    samples: int
    bad: int
    budget_consumed: float | None
    ci: Bound
    good_share: float | None = None
    """Latency and goodput kinds only."""


class _PhaseSpan(BaseModel):
    """Where a per-phase verdict was taken (`rushhour.reports.rundata.selection.phase_segments`)."""

    phase: str
    start_s: float | None
    end_s: float | None


class _Tail(BaseModel):
    """What is added to every row after its kind's producer: the steady-only verdict, whether the
    SLO is the implicit one, and the sentence of a threshold too tight for the harness."""

    steady_only: bool | None = None
    judged_over: str | None = None
    whole_run: WholeRunVerdict | None = None
    steady_note: str | None = None
    implicit: bool
    too_tight: str | None = None


class _Head(_Row):
    """The fields every latency and share row opens with (`rushhour.reports.measures.slos.measure`)."""

    name: str
    kind: str
    objective: float
    objective_text: str
    samples: int
    bad: int
    budget_consumed: float | None


class _LatencyMeasure(_Head):
    """The verdict `rushhour.reports.measures.slos.measure` writes for a latency kind, in its order."""

    kind: Literal["latency", "ttft", "tpot", "itl"]
    measured: float | None
    measured_ms: float | None
    ci: Bound
    trusted: bool
    met: bool
    good_share: float | None
    good_share_ci: Bound
    good_objective: float
    measured_ok_only_ms: float | None
    samples_ok: int
    ci_basis: IntervalBasis
    good_share_basis: IntervalBasis


class LatencyPhaseRow(_LatencyMeasure, _PhaseSpan):
    """A latency kind's verdict over one phase."""


class _LatencyCore(_LatencyMeasure):
    burn_rates: list[BurnRule]
    phases: list[LatencyPhaseRow]


class _ShareMeasure(_Head):
    """The verdict `rushhour.reports.measures.slos.measure` writes for a share kind, in its order."""

    kind: Literal["availability", "degraded"]
    measured: float | None
    met: bool
    ci: Bound
    trusted: bool
    ci_basis: IntervalBasis


class SharePhaseRow(_ShareMeasure, _PhaseSpan):
    """A share kind's verdict over one phase."""


class _ShareCore(_ShareMeasure):
    burn_rates: list[BurnRule]
    phases: list[SharePhaseRow]


class _GoodputLead(_Row):
    """The fields `rushhour.reports.measures.goodput.goodput_slo` opens with."""

    name: str
    objective: float
    objective_text: str
    burn_rates: list[BurnRule]


class _GoodputVerdict(_Row):
    """The goodput verdict over the run or one phase, in `rushhour.reports.measures.goodput.goodput_slo`'s order."""

    kind: Literal["goodput"]
    budget_consumed: float | None
    measured: float | None
    met: bool
    ci: Bound
    trusted: bool
    samples: int
    bad: int
    good_share: float | None


class GoodputPhaseRow(_GoodputVerdict, _PhaseSpan):
    """Goodput over one phase."""


class _GoodputCore(_GoodputVerdict, _GoodputLead):
    phases: list[GoodputPhaseRow]


class _DriftCore(_Row):
    """The fields `rushhour.reports.measures.drift.drift_slo` writes, in its order."""

    name: str
    kind: Literal["drift"]
    objective: float
    objective_text: str
    metric: str
    unit: str
    measured: float | None
    measured_text: str
    ci: Bound
    met: bool
    trusted: bool
    samples: int
    bad: int
    budget_consumed: float | None
    burn_rates: list[BurnRule]
    phases: Annotated[list[object], Field(max_length=0)]
    """Always empty: a drift is judged over the whole run."""
    method: str | None = None
    effective_points: float | None = None
    drift_note: str | None


class LatencySloRow(_Tail, _LatencyCore):
    """A latency, TTFT, TPOT or ITL objective: a good-events verdict with the percentile beside it."""


class ShareSloRow(_Tail, _ShareCore):
    """An availability or degraded-share objective, with its Clopper-Pearson interval."""


class GoodputSloRow(_Tail, _GoodputCore):
    """A goodput objective in req/s (`rushhour.reports.measures.goodput.goodput_slo`)."""


class DriftSloRow(_Tail, _DriftCore):
    """A drift objective: the slope of a soak trend per hour (`rushhour.reports.measures.drift.drift_slo`)."""


SloRow = Annotated[LatencySloRow | ShareSloRow | GoodputSloRow | DriftSloRow, Field(discriminator="kind")]
"""One judged SLO, its model chosen by `kind`."""


class SteadyStateOutcome(_Row):
    """The chaos journal's status and steady-state hypothesis before and after (`rushhour.reports.measures.faults.steady_state`)."""

    status: str | None
    deviated: bool
    before_met: bool | None
    after_met: bool | None


class RecoveryRule(_Row):
    """What recovery had to hold: a healthy stretch this long with this many requests (`RecoveryLimits.rule`)."""

    window_s: float
    min_requests: int


class FaultPeriodRow(_Row):
    """Before, during or after one fault (`rushhour.reports.measures.periods.fault_periods`)."""

    period: Literal["before", "during", "after"]
    start_s: float
    end_s: float
    requests: int
    p99_ms: float | None
    p99_samples: int
    error_rate: float | None
    offered_rps: float | None
    achieved_rps: float | None
    overlaps: list[str]


class FaultRow(_Row):
    """One injected fault's row (`rushhour.reports.measures.faults.fault_impact`) with its periods (`rushhour.reports.build.story`)."""

    name: str
    experiment: str
    start_s: float
    end_s: float
    ended: bool
    requests: int
    failed_requests: int
    shed_requests: int
    p99_during_ms: float | None
    p99_during_samples: int
    p99_during_trusted: bool
    p99_during_ok_only_ms: float | None
    recovery_s: float | None
    recovered: bool
    recovery_rule: RecoveryRule
    recovery_unclear: str | None
    steady_state: SteadyStateOutcome | None
    periods: list[FaultPeriodRow]
