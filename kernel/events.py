"""The events of `events.jsonl`: one typed model per event type, written and read through them.

A drill, an A/B run and a rebuilt run write their timeline through
`rushhour.scenarios.run.events.EventLog`, which checks each event against its model here before it
writes the line; `rushhour.reports.rundata` reads each line back through `parse_event`, so an event
of a type no model knows, or with a field of the wrong type, is refused by name (type, field) and
never read as if it were whole. Every event carries `type`, its run time `t_s` (seconds from the
load start) and the wall clock `wall`; fields a model does not declare are kept as written (the
environment, a scraper's tallies), the declared ones are the ones a reader relies on.

What a target says about itself is one type, `target_event` (`source` target), its own kinds under
`target_kind`: nothing a target sends can pose as one of the harness's marks.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from rushhour.kernel.calibration import CalibrationFields

__all__ = ["EVENT_MODELS", "Event", "EventError", "parse_event"]


class EventError(ValueError):
    """An event whose type no model knows, or whose fields its model refuses."""


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    t_s: float | None = None
    """Seconds from the load start (negative: before it)."""
    wall: str | None = None
    """The wall clock when it was written, ISO 8601 UTC."""
    source: str | None = None
    """Who said it: `harness` for the harness's own marks, `target` for what a target sent."""


class RunStart(_Event):
    """The run began: the scenario, its seed, the target and the machine's environment."""

    type: Literal["run_start"]
    scenario: str | None = None
    seed: int | None = None
    target: str | None = None
    processes: int | None = None
    time_scale: float | None = None
    rate_scale: float | None = None
    start_clock_s: float | None = None
    env: dict[str, Any] | None = None
    fault_lease_s: float | str | None = None
    """The lease a held fault gets, or why it could not be read."""


class CalibrationEvent(_Event):
    """What a relative peak (`0.7x capacity`) resolved to, before the load started: the calibration
    record's fields (`rushhour.kernel.calibration.CalibrationFields`), checked as that record."""

    type: Literal["calibration"]

    @model_validator(mode="after")
    def _record(self) -> CalibrationEvent:
        CalibrationFields.model_validate(self.model_extra or {})
        return self


class HarnessOverhead(_Event):
    """The harness's own latency measured against a stand-in before the run."""

    type: Literal["harness_overhead"]


class AbSettings(_Event):
    """An A/B run's settings the verdict stands on: threshold, confidence, design and targets."""

    type: Literal["ab"]
    threshold: float | None = None
    slo_thresholds: dict[str, float] | None = None
    confidence: float | None = None
    error_margin: float | None = None
    design: dict[str, Any] | None = None
    calibration: Any = None
    targets: dict[str, str] | None = None


class Workers(_Event):
    """Load workers on other hosts: each one's host, share and clock offset."""

    type: Literal["workers"]
    workers: list[dict[str, Any]]


class Phase(_Event):
    """A phase of the traffic model began."""

    type: Literal["phase"]
    name: str
    start_s: float
    end_s: float | None = None


class FaultStart(_Event):
    """A chaos experiment was started."""

    type: Literal["fault_start"]
    t_s: float
    name: str
    experiment: str | None = None
    scenario_time: str | float | None = None
    pid: int | None = None


class FaultEnd(_Event):
    """A chaos experiment ended (its rollbacks ran)."""

    type: Literal["fault_end"]
    t_s: float
    name: str
    experiment: str | None = None
    scenario_time: str | float | None = None
    returncode: int | None = None
    status: str | None = None
    interrupted: bool | None = None


class FaultSkipped(_Event):
    """A fault the scenario places outside the run: not injected."""

    type: Literal["fault_skipped"]
    name: str
    offset_s: float | None = None
    reason: str | None = None


class Counts(_Event):
    """A tally at the end of the run or an error on the way: the scraper's, the target metrics
    scraper's, the cluster's rejected workers, the live metrics endpoint."""

    type: Literal["scraper", "scraper_error", "target_metrics", "target_metrics_error", "cluster_rejections",
                  "live_metrics"]


class LeakAudit(_Event):
    """What the leak audit found after the run: clean or not, and each finding."""

    type: Literal["leak_audit"]
    clean: bool | None = None
    findings: list[dict[str, Any]] = Field(default_factory=list)


class Generator(_Event):
    """The load generator's health: its lag, connection waits, duplicates and CPU."""

    type: Literal["generator"]
    cpu_max: float | None = None
    lag_p99_ms: float | None = None
    pool_wait_p99_ms: float | None = None
    pool_wait_max_ms: float | None = None
    never_connected: int | None = None
    duplicates: int | None = None
    processes: int | None = None


class Abort(_Event):
    """The run stopped early, and why."""

    type: Literal["abort"]
    reason: str = ""


class RunEnd(_Event):
    """The run ended: its length (without the leak audit) and whether it was interrupted."""

    type: Literal["run_end"]
    duration_s: float | None = None
    interrupted: bool = False
    rebuilt: bool = False


class TargetEventRecord(_Event):
    """What a target said about itself, under its own type: its kind, sequence number and fields."""

    type: Literal["target_event"]
    target_kind: str
    target_seq: int
    data: dict[str, Any] = Field(default_factory=dict)


EVENT_MODELS: tuple[type[_Event], ...] = (
    RunStart, CalibrationEvent, HarnessOverhead, AbSettings, Workers, Phase, FaultStart, FaultEnd, FaultSkipped,
    Counts, LeakAudit, Generator, Abort, RunEnd, TargetEventRecord,
)
"""Every event type of `events.jsonl`, in the order the reference lists them."""

Event = Annotated[
    RunStart | CalibrationEvent | HarnessOverhead | AbSettings | Workers | Phase | FaultStart | FaultEnd
    | FaultSkipped | Counts | LeakAudit | Generator | Abort | RunEnd | TargetEventRecord,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: frozenset[str] = frozenset(
    kind for model in EVENT_MODELS for kind in get_args(model.model_fields["type"].annotation)
)


def parse_event(raw: object) -> Event:
    """One event checked against its model; EventError naming the type and the field when refused."""
    if not isinstance(raw, dict):
        raise EventError(f"An event must be a JSON object, not {type(raw).__name__}.")
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        raise EventError(f'The event type {kind!r} is none of the types events.jsonl holds.' if "type" in raw
                         else 'The event has no "type" field.')
    try:
        return _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        problems = "; ".join(f'{".".join(str(p) for p in e["loc"][1:]) or "(event)"}: {e["msg"]}' for e in exc.errors())
        raise EventError(f'The "{kind}" event is malformed: {problems}.') from exc
