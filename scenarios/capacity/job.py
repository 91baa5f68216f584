"""What one capacity job is: the scenario's mix and SLOs, the conditions, the rates and the steps.

Everything is checked before anything boots. In particular, a step can only show an SLO met
with 95% confidence once it holds enough requests in that SLO's scope (314 for a P99 with none
bad; 175 in a calibration's window, `rushhour.scenarios.capacity.calibrate`), so each SLO has a
*floor*: the lowest rate at which one step of the chosen length sees that many. A search below
the floor could only ever fail, so it is refused with the numbers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from rushhour.reports.capacity.stepstats import samples_to_pass
from rushhour.reports.estimate.sequential import ALPHA
from rushhour.reports.rundata.selection import slo_scope
from rushhour.reports.schema import CostModel, SloSpec
from rushhour.scenarios.capacity.relaxation import fixed_warmup_s
from rushhour.scenarios.capacity.search import SearchResult, SearchSettings, StepVerdict
from rushhour.scenarios.capacity.steps import StepRules, step_schedule
from rushhour.scenarios.spec.model import Scenario, ScenarioError
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.traffic_models import TrafficModelError, load_traffic_model
from rushhour.traffic_models.model import TrafficModel

__all__ = ["RETRY_MARGIN", "RETRY_MAX_S", "RETRY_S", "CapacityJob", "SloFloor", "confirm_rules_for", "default_range", "evidence_window_s",
           "load_mix", "opened_before", "retry_rules_for", "retry_text", "retry_window_s", "select_slos", "slo_floors", "step_rules",
           "with_retry"]

SHARE_SAMPLE_RPS = 2000.0
SHARE_SAMPLE_S = 10.0
DEFAULT_SPAN = 10.0


@dataclass(frozen=True)
class SloFloor:
    """The lowest rate at which one step can show `name` met: needed / (share x measure_s)."""

    name: str
    share: float
    needed: int
    floor_rps: float


DriftCheck = Literal["ends", "steps"]
DRIFT_CHECKS: tuple[DriftCheck, ...] = ("ends", "steps")
"""`ends`: the search's anchor again once, at its end; `steps`: a short anchor window after every step too."""
STEP_ANCHOR_S = 10.0
"""Measured seconds of the anchor window stepped after every step with the `steps` drift check
(the length the whole-search bench measured, docs/concepts/confidence.md)."""
RETRY_S = 120.0
"""Measured seconds of the one retry of a step that ended open (neither shown met nor missed): long
enough to span a queue's excursions near its knee, where a 30 s step holds too few independent
requests to show a P99 met (the whole-search bench, docs/benchmarks.md); the shortest retry."""
RETRY_MAX_S = 1200.0
"""Longest retry window by default: a retry lengthens from `RETRY_S` towards what the open step's
own clustering says a decision needs, up to this (`retry_window_s`). Twenty minutes is what a
queue of 100 ms service needs near its knee (the whole-search bench, docs/benchmarks.md)."""
RETRY_MARGIN = 2.0
"""A retry plans this many times the window in which a pass with no late request at all could
come: a rate just under the knee has a few late requests, and those need more."""


@dataclass(frozen=True, kw_only=True)
class CapacityJob:
    """A fully resolved `rushhour capacity` invocation."""

    scenario: Scenario
    source: str
    base_dir: Path
    mix: TrafficModel
    slos: list[SloSpec]
    conditions: list[str]
    settings: SearchSettings
    rules: StepRules
    out_dir: Path
    target_url: str | None = None
    require_rps: float | None = None
    seed: int = 0
    start_rps: float | None = None
    floors: list[SloFloor] = field(default_factory=list)
    probe: bool = False
    """Measure the saturated throughput first and search around it (`rushhour.scenarios.capacity.bracket`)."""
    measure_at: Callable[[float], float] | None = None
    """A step's window at a given rate, when steps are sized to their rate; None: `rules.measure_s` for every step."""
    warmup_at: Callable[[float], float] | None = None
    """A fresh step's warm-up at a given rate, when the probe measured the throughput
    (`rushhour.scenarios.capacity.relaxation`); None: the fixed warm-up of `step_rules`."""
    known_fail: StepVerdict | None = None
    """A failure seen just before this job (a cached capacity's check step): the search starts from
    it as its first failure and never steps at or above that rate (`SearchResult.after`)."""
    drift_check: DriftCheck = "ends"
    """How the search watches the machine: its anchor again at the end, or after every step too
    (`rushhour.scenarios.capacity.anchor`)."""
    retry_rules: StepRules | None = None
    """The rules of the one retry of a step that ended open (`SearchSettings.retry_open`); None:
    an open step counts as a failure at once."""
    retry_max_s: float | None = None
    """The longest the retry may grow to (`retry_window_s`); None: the retry keeps `retry_rules`'s window."""

    def warmup_s_at(self, rate_rps: float) -> float | None:
        """A fresh step's warm-up at `rate_rps` from `warmup_at`; None without one."""
        return None if self.warmup_at is None else self.warmup_at(rate_rps)

    @property
    def cost_model(self) -> CostModel | None:
        return self.scenario.cost

    @property
    def protocol(self) -> TargetProtocol:
        """The target's protocol fields as sent; a `--target` URL is not the embedded server, so it
        gets none of the embedded server's defaults."""
        target = self.scenario.target
        if self.target_url is None:
            return target.resolved()
        return TargetProtocol.model_validate(target.model_dump(include=set(TargetProtocol.model_fields)))


def load_mix(scenario: Scenario, *, source: str, base_dir: Path) -> TrafficModel:
    """The scenario's traffic model, whose request mix every step replays."""
    candidate = base_dir / scenario.traffic.model
    try:
        return load_traffic_model(candidate if candidate.is_file() else scenario.traffic.model)
    except TrafficModelError as exc:
        raise ScenarioError(f"{source}: traffic.model: {exc}") from exc


def select_slos(scenario: Scenario, names: tuple[str, ...], *, source: str) -> list[SloSpec]:
    """The scenario's SLOs, or only those named (each must exist); goodput objectives are left out
    (a rate is no per-request objective: each step reports its goodput instead)."""
    known = {slo.name: slo for slo in scenario.slos}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ScenarioError(f'{source}: slos: no SLO named "{unknown[0]}"; the scenario has '
                            f"{', '.join(known) or 'none'}.")
    named = [known[name] for name in dict.fromkeys(names)]
    rates = [spec for spec in named if spec.kind in ("goodput", "drift")]
    if rates:
        what = "a rate" if rates[0].kind == "goodput" else "a trend over hours"
        raise ScenarioError(f'{source}: slos: "{rates[0].name}" is a {rates[0].kind} objective, {what} rather than a '
                            "per-request objective, so a step cannot be judged on it; every step reports its goodput over the "
                            "per-request SLOs (ttft, tpot, latency, ...), and the capacity they give is the "
                            "highest goodput-meeting rate.")
    chosen = named or [spec for spec in scenario.slos if spec.kind not in ("goodput", "drift")]
    if not chosen:
        raise ScenarioError(f"{source}: slos: the scenario has no per-request SLO (latency, availability, degraded, "
                            "ttft, tpot, itl), so no rate can be shown to meet one.")
    return chosen


def slo_floors(mix: TrafficModel, specs: list[SloSpec], measure_s: float, *, seed: int = 0,
               met_error: float = ALPHA) -> list[SloFloor]:
    """Each SLO's share of the mix and the lowest rate a step of `measure_s` can show it met at,
    with "met" spending `met_error`."""
    sample = step_schedule(mix, rate_rps=SHARE_SAMPLE_RPS, duration_s=SHARE_SAMPLE_S, seed=seed)
    frame = sample.rename(columns={"offset_s": "intended_s"})
    phases = pd.Series("", index=frame.index)
    floors = []
    for spec in specs:
        share = float(slo_scope(frame, phases, spec.model_copy(update={"phase": None})).mean()) if len(frame) else 0.0
        needed = samples_to_pass(spec, met_error=met_error)
        floor = needed / (share * measure_s) if share > 0 else math.inf
        floors.append(SloFloor(spec.name, share, needed, floor))
    return floors


def check_floors(floors: list[SloFloor], min_rps: float, measure_s: float, *, source: str) -> None:
    """Refuse a search whose lowest rate cannot show some SLO met, saying what would."""
    empty = [f.name for f in floors if f.share == 0]
    if empty:
        raise ScenarioError(f'{source}: slos: "{empty[0]}" selects no request of the scenario\'s mix, so it '
                            "can never be shown met.")
    worst = max(floors, key=lambda f: f.floor_rps)
    if min_rps + 1e-9 < worst.floor_rps:
        longer = worst.needed / (worst.share * min_rps)
        raise ScenarioError(
            f'SLO "{worst.name}" needs {worst.needed} requests in its scope per step to be shown met with 95% '
            f"confidence, and it covers {100 * worst.share:.1f}% of the mix: a {measure_s:g} s step reaches "
            f"that from {worst.floor_rps:.1f} req/s, above --min-rps {min_rps:g}. Raise --min-rps to "
            f"{math.ceil(worst.floor_rps)}, lengthen --step-duration to {math.ceil(longer)}s, or leave the "
            "SLO out with --slo.")


def default_range(floors: list[SloFloor], min_rps: float | None, max_rps: float | None) -> tuple[float, float]:
    """--min-rps defaults to the highest SLO floor (at least 1), --max-rps to 10x the minimum."""
    low = min_rps if min_rps is not None else max(1.0, math.ceil(max(f.floor_rps for f in floors) * 10) / 10)
    high = max_rps if max_rps is not None else low * DEFAULT_SPAN
    return float(low), float(high)


def step_rules(measure_s: float, max_lag_p99_ms: float, met_error: float = ALPHA, *,
               warmup_s: float | None = None) -> StepRules:
    """A step of `measure_s` with `warmup_s` of warm-up (None: `fixed_warmup_s`), its looks, "met"
    spending `met_error`."""
    return StepRules(measure_s=measure_s, warmup_s=fixed_warmup_s(measure_s) if warmup_s is None else warmup_s,
                     max_lag_p99_ms=max_lag_p99_ms, met_error=met_error)


def retry_rules_for(result: SearchResult, retry: StepRules | None, rate: float) -> StepRules | None:
    """The rules of the retry when a step at `rate` is a retry of the search's last step, which
    ended open at that rate and offered one (`StepVerdict.retry_s`, `SearchSettings.retry_open`):
    `retry` with that window; None for any other step."""
    last = result.steps[-1] if result.steps else None
    if retry is None or last is None or not last.open or last.rate_rps != rate or last.retry_s is None:
        return None
    return dataclasses.replace(retry, measure_s=last.retry_s)


def with_retry(verdict: StepVerdict, *, ran_s: float, was_retry: bool, retry: StepRules | None,
               max_s: float | None, revisit: bool = False) -> StepVerdict:
    """`verdict` with the retry it offers (`StepVerdict.retry_s`), when it ended open: none without
    `retry`, and none on a `revisit` (a fresh step at a rate that ended open earlier in the search:
    each retry is a fresh chance of a wrong "met", so a rate gets its retries once). With a fixed
    retry (`max_s` None) one, of `retry`'s window, after a step that was no retry; otherwise
    `retry_window_s` of its evidence, offered again after a retry only while that grows past the
    `ran_s` seconds the retry measured (a retry that ended open with the independent requests it
    asked for has a share near the allowance, and a longer one would only repeat the question)."""
    if not verdict.open or retry is None or (revisit and not was_retry):
        return verdict
    if max_s is None:
        return verdict if was_retry else dataclasses.replace(verdict, retry_s=retry.measure_s)
    window = retry_window_s(verdict.evidence_s, retry.measure_s, max_s)
    if was_retry and window <= ran_s:
        return verdict
    return dataclasses.replace(verdict, retry_s=window)


def confirm_rules_for(result: SearchResult, retry: StepRules | None, rate: float, *,
                      max_s: float | None) -> StepRules | None:
    """With a retry that grows (`max_s`), `retry` with the window of the retry that passed at
    `rate`, when the search's last step at that rate is such a pass (a step there now is its
    confirmation): a rate that took a long window to decide is judged again on as long a one, not
    on a step too short to pass there. None for any other step, and with a fixed retry."""
    if retry is None or max_s is None:
        return None
    at_rate = [s for s in result.steps if s.rate_rps == rate]
    if len(at_rate) < 2 or at_rate[-1].verdict != "pass":
        return None
    opened = at_rate[-2]
    if not opened.open or opened.retry_s is None:
        return None
    return dataclasses.replace(retry, measure_s=opened.retry_s)


def opened_before(result: SearchResult, rate: float) -> bool:
    """Whether a step at `rate` ended open earlier in the search (`with_retry`'s `revisit`)."""
    return any(s.open and s.rate_rps == rate for s in result.steps)


def retry_text(open_step: StepVerdict, retry: StepRules, max_s: float | None) -> str:
    """Why the retry of `open_step` is as long as it is, in words."""
    head = f"{open_step.rate_rps:.1f} req/s ended open; stepping it again for {retry.measure_s:g} s"
    if max_s is None or open_step.evidence_s is None:
        return head
    need = RETRY_MARGIN * open_step.evidence_s
    if need > max_s and retry.measure_s >= max_s:
        return (f"{head}, the longest --retry-max allows: its requests' clustering asks for about {need:,.0f} s to "
                "decide it, so it may stay open and the capacity may lie above the figure")
    return f"{head} (its requests' clustering asks for about {need:,.0f} s to decide it)"


def retry_window_s(evidence_s: float | None, floor_s: float, max_s: float) -> float:
    """A retry's window: `RETRY_MARGIN` times the open step's `evidence_s` (the seconds in which
    its rate brings the independent requests a pass needs with none bad), between `floor_s` and
    `max_s` (whichever is larger wins, so a budget under the floor keeps the floor), in whole seconds."""
    if evidence_s is None:
        return floor_s
    return max(floor_s, min(float(math.ceil(RETRY_MARGIN * evidence_s)), max_s))


def evidence_window_s(samples: int, design_effect: float, needed: int, measured_s: float) -> float | None:
    """Seconds of window in which a step's rate brings `needed` independent requests at
    `design_effect` (`samples` requests came in `measured_s`); None without any request."""
    if samples <= 0 or measured_s <= 0:
        return None
    return needed * max(design_effect, 1.0) * measured_s / samples
