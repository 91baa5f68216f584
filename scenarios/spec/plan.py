"""A scenario resolved into what will actually happen: schedule, phases, chaos times.

Everything here is pure (no server, no Locust, no files written), so `--dry-run` and the real
run share one code path up to the moment traffic starts, and every input error surfaces
before anything is booted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import ValidationError

from rushhour.kernel.clock import format_clock
from rushhour.reports.schema import SloSpec
from rushhour.scenarios.spec.chaos import PlannedFault, plan_faults
from rushhour.scenarios.spec.model import Scenario, ScenarioError, format_errors
from rushhour.scenarios.spec.overrides import Overrides as Overrides  # kept importable from here
from rushhour.scenarios.spec.overrides import apply_overrides as apply_overrides
from rushhour.scenarios.spec.peak import Calibration
from rushhour.traffic_models import Phase, TrafficModelError, generate_schedule, load_traffic_model, phases, rate_curve
from rushhour.traffic_models.chunked import DEFAULT_CHUNK_ROWS, iter_schedule
from rushhour.traffic_models.facts import ScheduleFacts
from rushhour.traffic_models.model import TrafficModel

PROJECT_DIR = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ScheduleDraw:
    """How the run's schedule is drawn (model, seed, window, rate), so it can be drawn again a
    chunk at a time instead of being kept: a soak's schedule is millions of rows."""

    model: TrafficModel
    seed: int
    rate_scale: float
    time_scale: float
    start_clock_s: float
    duration_s: float

    def chunks(self, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[pd.DataFrame]:
        """The schedule's rows in order, `chunk_rows` at a time (`rushhour.traffic_models.chunked`)."""
        return iter_schedule(self.model, seed=self.seed, rate_scale=self.rate_scale, time_scale=self.time_scale,
                             start_clock_s=self.start_clock_s, duration_s=self.duration_s, chunk_rows=chunk_rows)

    def whole(self) -> pd.DataFrame:
        return generate_schedule(self.model, seed=self.seed, rate_scale=self.rate_scale, time_scale=self.time_scale,
                                 start_clock_s=self.start_clock_s, duration_s=self.duration_s)


@dataclass(frozen=True)
class DrillPlan:
    """The resolved drill: scenario with overrides applied, how its schedule is drawn, and the
    facts about that schedule (row count, peak rate, label groups) gathered without keeping it."""

    scenario: Scenario
    source: str
    base_dir: Path
    rate_scale: float
    draw: ScheduleDraw
    facts: ScheduleFacts
    phases: list[Phase]
    chaos: list[PlannedFault]

    @property
    def duration_s(self) -> float:
        return self.scenario.traffic.duration_s

    @cached_property
    def schedule(self) -> pd.DataFrame:
        """The whole schedule in memory, drawn on first use, for checks on a short one; `run` and
        `ab` draw, write and read it in chunks instead (`draw.chunks`)."""
        return self.draw.whole()


def _updated(
    scenario: Scenario, section: str, changes: dict[str, object], source: str, *, replace: bool = False,
) -> Scenario:
    data = scenario.model_dump(mode="json")
    data[section] = changes if replace else {**(data.get(section) or {}), **changes}
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(format_errors(f"{source} (with command-line overrides)", exc)) from exc


def _load_model(spec: str, base_dir: Path, source: str) -> TrafficModel:
    candidate = base_dir / spec
    try:
        return load_traffic_model(candidate if candidate.is_file() else spec)
    except TrafficModelError as exc:
        raise ScenarioError(f"{source}: traffic.model: {exc}") from exc


def phase_names(model: TrafficModel) -> list[str]:
    """Every phase name a run of `model` can have: warm-up and base, and those its events make."""
    made = {label for event in model.events for label, _, _ in event.spans()}
    return ["warm-up", "base", *(label for label in ("ramp", "peak", "recovery") if label in made)]


def check_slo_scopes(slos: Sequence[SloSpec], model: TrafficModel, *, source: str) -> None:
    """Refuse an SLO whose priority, request_kind, mode or phase names nothing of the model: it
    would be judged on no request at all."""
    known: dict[str, tuple[list[str], str]] = {
        "priority": (list(model.mix.priorities), "a priority of the traffic mix"),
        "request_kind": (list(model.mix.kinds), "a request kind of the traffic mix"),
        "mode": (list(model.mix.modes), "a mode of the traffic mix"),
        "phase": (phase_names(model), "a phase of the traffic model"),
    }
    for index, slo in enumerate(slos):
        for field, (names, what) in known.items():
            value = getattr(slo, field)
            if value is not None and value not in names:
                raise ScenarioError(f'{source}: slos[{index}].{field}: "{value}" is not {what} '
                                    f"({', '.join(names)}).")


def _rate_scale(scenario: Scenario, model: TrafficModel, source: str) -> float:
    """rate_scale as given, or derived so the run's peak rate equals `peak_rps`."""
    traffic = scenario.traffic
    if traffic.peak_rps is None:
        return traffic.rate_scale if traffic.rate_scale is not None else 1.0
    if not isinstance(traffic.peak_rps, (int, float)):
        raise ScenarioError(f'{source}: traffic.peak_rps: "{traffic.peak_rps}" is relative to the measured capacity; '
                            "the calibration step resolves it before the plan is built.")
    _, rates = rate_curve(model, time_scale=traffic.time_scale, start_clock_s=traffic.start_clock_s,
                          duration_s=traffic.duration_s)
    peak = float(np.max(rates)) if len(rates) else 0.0
    if peak <= 0:
        raise ScenarioError(f"{source}: traffic.peak_rps: the model has no traffic in this window to scale.")
    return traffic.peak_rps / peak


def with_calibration(scenario: Scenario, calibration: Calibration, *, source: str) -> Scenario:
    """The scenario with its relative peak ("0.7x capacity") replaced by the rate it resolved to,
    and the calibration that resolved it kept beside it (the report says where the figure came from)."""
    return _updated(scenario, "traffic", {"peak_rps": calibration.peak_rps, "calibration": calibration.model_dump()},
                    source)


def pin_rate_scale(scenario: Scenario, *, source: str, base_dir: Path) -> Scenario:
    """Turn `peak_rps` into `rate_scale` over the file's own window, before any override.

    So `--duration 30s` plays the first 30 s of the same drill, at the same rate, instead of
    rescaling a quiet morning up to the evening's peak. A peak relative to the machine's capacity
    is resolved first, by the calibration step (`with_calibration`).
    """
    if scenario.traffic.peak_rps is None:
        return scenario
    model = _load_model(scenario.traffic.model, base_dir, source)
    rate_scale = _rate_scale(scenario, model, source)
    return _updated(scenario, "traffic", {"rate_scale": rate_scale, "peak_rps": None}, source)


def _plan_chaos(scenario: Scenario, base_dir: Path, source: str) -> list[PlannedFault]:
    traffic = scenario.traffic
    return plan_faults(scenario.chaos, start_clock_s=traffic.start_clock_s, time_scale=traffic.time_scale,
                       duration_s=traffic.duration_s, search_dirs=(Path.cwd(), base_dir, PROJECT_DIR), source=source)


def build_plan(scenario: Scenario, *, source: str, base_dir: Path) -> DrillPlan:
    """Resolve model, rate, schedule, phases and chaos times; raise ScenarioError if anything is off."""
    traffic = scenario.traffic
    model = _load_model(traffic.model, base_dir, source)
    check_slo_scopes(scenario.slos, model, source=source)
    rate_scale = _rate_scale(scenario, model, source)
    draw = ScheduleDraw(model, traffic.seed, rate_scale, traffic.time_scale, traffic.start_clock_s,
                        traffic.duration_s)
    try:  # drawn once here, a chunk at a time, so every input error surfaces before anything boots
        facts = ScheduleFacts.of(draw.chunks())
        run_phases = phases(model, time_scale=traffic.time_scale, start_clock_s=traffic.start_clock_s,
                            duration_s=traffic.duration_s)
    except TrafficModelError as exc:
        raise ScenarioError(f"{source}: traffic: {exc}") from exc
    chaos = _plan_chaos(scenario, base_dir, source)
    return DrillPlan(scenario=scenario, source=source, base_dir=base_dir, rate_scale=rate_scale,
                     draw=draw, facts=facts, phases=run_phases, chaos=chaos)


def peak_rate(schedule: pd.DataFrame, window_s: float = 5.0) -> float:
    """Highest arrival rate over any `window_s` bin of the schedule (requests per second)."""
    if schedule.empty:
        return 0.0
    bins = np.floor(schedule["offset_s"].to_numpy() / window_s).astype(np.int64)
    return float(np.bincount(bins).max() / window_s)


def describe(plan: DrillPlan) -> str:
    """The dry-run text: what would run, for how long, how hard, and when each fault fires."""
    s, facts = plan.scenario, plan.facts
    target = s.target.url or f"embedded reference server ({s.target.embedded})"
    lines = [
        f"scenario   {s.name}: {s.description}".rstrip(": "),
        f"source     {plan.source}",
        f"target     {target}",
        f"traffic    {s.traffic.model}, time_scale {s.traffic.time_scale:g}, rate_scale {plan.rate_scale:.4g}, "
        f"from {s.traffic.start_clock}, seed {s.traffic.seed}",
        *([f"capacity   {s.traffic.calibration.text}"] if s.traffic.calibration else []),
        f"duration   {plan.duration_s:.0f} s (model clock {format_clock(s.traffic.start_clock_s)} to "
        f"{format_clock(s.traffic.start_clock_s + plan.duration_s * s.traffic.time_scale)})",
        f"requests   {facts.count} scheduled, mean {facts.count / plan.duration_s:.1f}/s, "
        f"peak {facts.peak_rps:.1f}/s (5 s bins)",
        f"load       {s.load.mode} loop, {s.load.processes} Locust process(es), lag p99 limit {s.load.max_lag_p99_ms:g} ms"
        + (", documents via POST /v1/jobs" if s.load.jobs_in_use else ""),
        "phases",
        *(f"  {p.start_s:7.1f}-{p.end_s:7.1f} s  {p.name}" for p in plan.phases),
        "chaos" + ("" if plan.chaos else "      none"),
        *(f"  {c.offset_s:7.1f} s  ({c.scenario_time} model clock)  {c.name}: {c.experiment}"
          + (f"  held {c.hold} = {c.hold_s:.1f} s" if c.hold_s is not None else "")
          + ("" if c.in_run else "  [skipped: outside the run]") for c in plan.chaos),
        f"slos       {', '.join(slo.name for slo in s.slos) or 'none'}",
    ]
    return "\n".join(lines)

