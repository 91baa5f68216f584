"""capacity.json as one typed model: the search's answer per condition, every step, and the settings.

`rushhour.scenarios.capacity.document` assembles the document (steps from
`rushhour.scenarios.capacity.record.step_entry`, conditions from `condition_entry`) and validates it
here before writing it; `read_capacity` parses a written file back. What readers act on is typed
(verdicts, rates, intervals, each SLO call's method and effective sample size); the step, SLO-call,
condition and settings parts take further keys as they come (`extra="allow"`), since the step
statistics grow with the search.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rushhour.reports.estimate.intervals import Percentile

__all__ = ["AtCapacity", "CapacityDocument", "ConditionResult", "FloorEntry", "KnownFail", "MachineDrift", "PoolUsage",
           "SearchSettings", "SloCallEntry", "SloSetting", "StepCost", "StepEntry", "StepGenerator",
           "read_capacity"]


class _Fixed(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class _Growing(BaseModel):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class SloCallEntry(_Growing):
    """One SLO's decision at a step's last look, with its evidence."""

    name: str
    """The SLO's name."""
    kind: str
    """The SLO's kind (`latency`, `availability`, ...)."""
    objective_text: str
    """The objective in words."""
    decision: Literal["met", "missed", "open"]
    """`met` or `missed` once the evidence shows it; `open` when the step ended first."""
    samples: int
    """Requests in the SLO's scope."""
    bad: int
    """Requests past the objective."""
    measured: float | None
    """The measured figure (ms for time objectives, a share otherwise)."""
    lower: float | None
    """The lower bound of the measured figure at the look's level."""
    upper: float | None
    """The upper bound of the measured figure at the look's level."""
    needed: int
    """Fewest requests in scope with which the SLO can be shown met."""
    design_effect: float
    """How many requests counted as one independent one."""
    effective_samples: int
    """samples / design effect: the independent requests behind the decision."""
    method: str
    """The method and effective sample size behind the decision, in words."""


class StepGenerator(_Growing):
    """Whether the load generator kept up during the step."""

    lag_p99_ms: float | None
    """P99 of the generator's lag behind the schedule."""
    pool_wait_p99_ms: float | None
    """P99 wait for a free connection."""
    duplicates: int | None
    """Requests sent more than once."""
    cpu_max: float | None
    """The generator's highest CPU share."""
    valid: bool
    """False when the generator, not the target, was the bottleneck."""


class PoolUsage(_Fixed):
    """One pool's mean use over a step's window (targets with `/v1/status`)."""

    nodes_alive: float
    """Nodes alive."""
    slots_busy: float
    """Busy slots."""
    queue_depth: float
    """Requests queued."""
    utilisation: float | None
    """Busy slots / slots of the ready nodes; null when the pool's slots are unknown."""


class StepCost(_Growing):
    """The cost at a step's rate, from the scenario's cost model."""

    known: bool | None = None
    """Whether the cost could be computed."""
    usd_per_1k_chars: float | None = None
    """Dollars per thousand characters."""
    total_usd: float | None = None
    """Dollars over the step's window."""


class StepEntry(_Growing):
    """One step: a rate held, what it achieved, and its verdict."""

    index: int
    """The step's number in the condition's search, from 1."""
    offered_rps: float
    """The rate the schedule offered, requests per second."""
    offered_measured_rps: float | None
    """The rate actually offered over the window."""
    achieved_rps: float | None
    """The rate answered."""
    achieved_share: float | None
    """Answered / offered."""
    latency_ms: dict[str, Percentile]
    """P50, P95 and P99 with their 95% intervals."""
    goodput_rps: float | None
    """Requests per second that met every SLO."""
    error_rate: float | None
    """Share of finished requests that failed."""
    shed_rate: float | None
    """Share of finished requests the target shed."""
    requests: int | None
    """Requests in the window."""
    passed: bool
    """Whether the step passed."""
    verdict: Literal["pass", "fail", "invalid"]
    """The step's verdict."""
    limiting: str | None
    """The SLO (or the generator) that failed it."""
    reason: str
    """The verdict in words."""
    early: bool
    """Whether the decision came at an early look."""
    continues: int | None
    """The passing step whose load this one went on from, if any."""
    warmup_s: float
    """Seconds of warm-up."""
    measured_s: float
    """Seconds measured."""
    planned_s: float | None = None
    """Seconds the window was planned to measure (an open step's retry plans a longer one)."""
    wall_s: float
    """Seconds from the schedule's start to the step's end."""
    settle_s: float
    """Seconds waited before it for the target to drain."""
    slos: list[SloCallEntry]
    """Each SLO's decision."""
    generator: StepGenerator
    """The generator's health."""
    pools: dict[str, PoolUsage]
    """Use per pool."""
    cost: StepCost | None
    """The cost at this rate; null without a cost model."""
    dir: str
    """The step's folder under the condition's folder."""


class KnownFail(_Fixed):
    """A rate already known to fail, carried from an earlier condition's search."""

    rate_rps: float | None
    """The rate."""
    limiting: str | None
    """What failed it."""
    reason: str
    """Why, in words."""


class UndecidedFail(_Fixed):
    """A failure that was no miss: the step, its retry too, neither showed the SLO met nor missed."""

    rate_rps: float | None
    """The rate, requests per second."""
    evidence_s: float | None
    """Seconds of window in which that rate brings the independent requests a pass needs with none
    bad, at the clustering its last step measured; null when not known."""
    sentence: str
    """The same in words, as the summary carries it."""


class AtCapacity(_Fixed):
    """The passing step at the capacity: its pools and cost."""

    pools: dict[str, PoolUsage]
    """Use per pool."""
    cost: StepCost | None
    """The cost at the capacity."""
    step: int
    """The step's index."""


class AnchorWindow(_Fixed):
    """One short anchor window of the `steps` drift check, compared with the anchor."""

    after_step: int
    """The search step it followed."""
    step: int
    """Its own step index."""
    ratio: float
    """Its geometric-mean latency over the anchor's."""
    interval: list[float]
    """The ratio's interval, [low, high]."""
    changed: bool
    """Whether it shows the machine changed beyond the noise."""


class MachineDrift(_Fixed):
    """The search's anchor: one rate stepped at its start and again at its end (or, with the `steps`
    check, in a short window after every step), the windows compared."""

    rate_rps: float
    """The anchor's rate, requests per second (the search's first pass)."""
    ratio: float
    """End over start: the ratio of the two windows' geometric-mean latencies (above 1: slower at the end)."""
    interval: list[float]
    """The ratio's interval, [low, high]."""
    confidence: float
    """The interval's level."""
    effective: list[float]
    """Effective sample sizes of the start and end windows (batch means over their log latencies)."""
    tolerance: float
    """How far from 1 the whole interval must lie for the machine to count as changed."""
    method: str
    """How the ratio's interval was computed."""
    changed: bool
    """Whether the machine answered the same load differently beyond the noise (the figure is then unconfirmed)."""
    sentence: str
    """What the comparison showed, in words."""
    steps: list[int]
    """The indexes of the two steps compared (with `steps`: the anchor and the window reported)."""
    check: Literal["ends", "steps"] = "ends"
    """Which drift check ran: `ends` (the anchor again at the search's end) or `steps` (after every step)."""
    windows: list[AnchorWindow] = []
    """With `steps`: every short window's comparison, in order; empty with `ends`."""
    changed_after_step: int | None = None
    """With `steps`: the step after which the machine was first seen changed; null otherwise."""


class ConditionResult(_Growing):
    """One condition's search: the capacity, its bracket, what limited it and every step."""

    condition: str
    """`none` (healthy) or the fault held (`n-1`)."""
    capacity_rps: float | None
    """The capacity, requests per second; null when not measured."""
    bracket: list[float | None]
    """[highest passing rate, lowest failing rate]."""
    limiting_slo: str | None
    """The SLO that failed first above the capacity."""
    generator_bound: bool
    """Whether the generator reached its limit before the target."""
    generator_limit: float | None
    """The highest rate the generator could offer, when it was the limit."""
    ceiling: bool
    """Whether every rate up to --max-rps passed."""
    below_min: bool
    """Whether even the lowest rate failed."""
    confirmed: bool | None
    """Whether a second pass at or above the capacity confirmed it (false too when the anchor saw the
    machine change, `machine_drift`); null when the search stopped before the question arose."""
    known_fail: KnownFail | None
    """A failing rate known before the search."""
    undecided_fail: UndecidedFail | None = None
    """The lowest failing rate when its last step ended open (neither shown met nor missed): the
    capacity may lie above it too; null when that failure was a miss."""
    machine_drift: MachineDrift | None = None
    """The anchor's comparison of the machine at the search's start and end; null when none ran."""
    meets_requirement: bool | None
    """Whether the capacity meets --require; null without it."""
    summary: str
    """The answer in words."""
    wall_s: float
    """Seconds the condition took."""
    at_capacity: AtCapacity | None
    """The passing step at the capacity."""
    steps: list[StepEntry]
    """Every step, by offered rate."""
    interrupted: bool
    """Whether the operator interrupted the search."""
    probe: dict[str, Any] | None = None
    """The closed-loop throughput probe, when one planned the search."""
    plan: dict[str, Any] | None = None
    """The search plan the probe gave; null when it gave none."""


class SloSetting(_Fixed):
    """One SLO as the search judged it."""

    name: str
    """The SLO's name."""
    objective: str
    """The objective in words."""
    kind: str
    """The SLO's kind."""
    threshold_ms: float | None
    """The latency threshold, for latency kinds."""
    percentile: float | None
    """The percentile, for latency kinds."""


class FloorEntry(_Fixed):
    """The lowest rate at which one step can show an SLO met."""

    name: str
    """The SLO's name."""
    share: float
    """The share of requests in its scope."""
    needed: int
    """Requests in scope a pass needs."""
    floor_rps: float
    """needed / (share × step seconds)."""


class SearchSettings(_Growing):
    """The search's settings."""

    min_rps: float
    """The lowest rate tried."""
    max_rps: float
    """The highest rate tried."""
    precision: float
    """The bracket's relative width at which the search stops."""
    step_duration_s: float
    """Seconds measured per step."""
    warmup_s: float
    """Seconds of warm-up of a fresh step planned without the throughput probe (a probed search
    warms each step up for its queue's relaxation time: every step records its own `warmup_s`)."""
    seed: int | None
    """The seed of the steps' schedules."""
    start_rps: float | None
    """The rate of the first step, when given."""
    met_error: float
    """The error a "met" spends over a step's looks."""
    drift_check: Literal["ends", "steps"] = "ends"
    """How the search watched the machine: "ends" (its anchor again at the end) or "steps" (a short
    anchor window after every step too)."""
    retry_duration_s: float = 0.0
    """Shortest window of the one retry of a step that ended open (0: an open step was a failure at once)."""
    retry_max_s: float = 0.0
    """Longest window the retry could grow to, as the open step's clustering asked (equal to
    `retry_duration_s`, or 0, when it could not grow)."""


class CapacityDocument(_Growing):
    """capacity.json: the first condition's answer as the headline, every condition, and the settings."""

    schema_version: int
    """The document's version."""
    scenario: str
    """The scenario's name."""
    source: str | None
    """The scenario file."""
    target: str | None
    """The target searched."""
    capacity_rps: float | None
    """The first condition's capacity."""
    bracket: list[float | None] | None
    """The first condition's bracket."""
    limiting_slo: str | None
    """The first condition's limiting SLO."""
    generator_bound: bool | None
    """Whether the first condition was generator-bound."""
    steps: list[StepEntry]
    """The first condition's steps."""
    conditions: list[ConditionResult]
    """Every condition searched."""
    require_rps: float | None
    """The --require rate."""
    aborted: str | None
    """Why the job stopped early; null when it did not."""
    slos: list[SloSetting]
    """The SLOs judged."""
    floors: list[FloorEntry]
    """Each SLO's floor rate."""
    settings: SearchSettings
    """The search's settings."""
    environment: dict[str, Any]
    """The machine and package versions."""
    wall_s: float
    """Seconds the job took."""


def read_capacity(path: Path) -> CapacityDocument:
    """A capacity.json parsed through its model (pydantic's ValidationError names a malformed field)."""
    return CapacityDocument.model_validate_json(Path(path).read_text(encoding="utf-8"))
