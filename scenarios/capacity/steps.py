"""One step of the search, as data: its schedule, what is known mid-step, and the step's verdict.

A step is the scenario's request mix (kinds, sizes, priorities, modes, repetition) at one
constant open-loop Poisson rate: a warm-up, then a measurement window. The window is judged at a
few planned looks (`rushhour.reports.estimate.sequential`: evenly spread, with O'Brien-Fleming error spending), each
over the requests due up to its share of the window; `assess` is one look and says pass, fail,
invalid or keep going. It is pure (no Locust, no server), so the rules are tested on made-up
frames.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np
import pandas as pd

from rushhour.kernel.generator import schedule_lag_ms
from rushhour.kernel.quantiles import percentile_or_none
from rushhour.reports.capacity.stepstats import SloCall, judge_slos, reachable, step_figures
from rushhour.reports.estimate.sequential import ALPHA, LOOKS, look_fractions
from rushhour.reports.rundata.selection import slo_scope
from rushhour.reports.schema import LATENCY_KINDS, SloSpec
from rushhour.scenarios.capacity.search import GENERATOR
from rushhour.scenarios.load.health import generator_figures
from rushhour.scenarios.load.parts import merge_requests
from rushhour.traffic_models import generate_schedule
from rushhour.traffic_models.model import TrafficModel

__all__ = ["Assessment", "StepRules", "assess", "completions", "curtailed", "from_send", "live_frame", "look_times",
           "step_schedule"]

Decision = Literal["pass", "fail", "invalid", "continue"]
DEFAULT_MEASURE_S = 30.0
ACHIEVED_SHARE = 0.98
CPU_SATURATED = 0.95
THROUGHPUT = "throughput"
SPARE_ROWS = 1.3  # draw the mix at a higher rate, so that rate x duration rows are (nearly) always there
SETTLE_S = 5.0


@dataclass(frozen=True, kw_only=True)
class StepRules:
    """How long a step runs and how many planned looks judge it (the last at the window's end);
    `met_error` is the chance a step calls an SLO met that is truly missed (`rushhour.reports.estimate.sequential`)."""

    measure_s: float = DEFAULT_MEASURE_S
    warmup_s: float = 5.0
    looks: int = LOOKS
    tail_s: float = 30.0
    record_lag_s: float = 1.5
    min_achieved_share: float = ACHIEVED_SHARE
    max_lag_p99_ms: float = 50.0
    met_error: float = ALPHA
    curtail: bool = True
    """False for a window kept to be measured, not judged (the drift check's short windows): it runs
    its whole length even when its final look can no longer pass."""

    @property
    def confidence(self) -> str:
        """The confidence a pass states, in words ("95%")."""
        return f"{100 * (1 - self.met_error):.3g}%"

    @property
    def window(self) -> tuple[float, float]:
        return self.warmup_s, self.warmup_s + self.measure_s

    @property
    def schedule_s(self) -> float:
        return self.warmup_s + self.measure_s

    @property
    def deadline_s(self) -> float:
        """The latest moment (step clock) a step is judged, pending requests or not."""
        return self.schedule_s + self.tail_s

    def following(self, verdict_s: float) -> StepRules:
        """The window that goes on with this step's load after a verdict at `verdict_s` (step
        clock): as long as this one, starting where the requests this verdict judged end."""
        return dataclasses.replace(self, warmup_s=min(verdict_s, self.window[1]))

    def look_end(self, look: int) -> float:
        """The end (step clock) of the requests look `look` covers: its share of the window."""
        start, end = self.window
        return start + float(look_fractions(self.looks)[look - 1]) * (end - start)


def look_times(rules: StepRules, specs: list[SloSpec]) -> list[float]:
    """When each interim look is taken: once its requests have had time to be answered (the
    longest latency threshold, at most SETTLE_S) and recorded. The last look is the step's end."""
    thresholds = [float(s.threshold_ms or 0) / 1000.0 for s in specs if s.kind in LATENCY_KINDS]
    settle = min(max(thresholds, default=SETTLE_S), SETTLE_S) + rules.record_lag_s
    return [rules.look_end(k) + settle for k in range(1, rules.looks)]


@dataclass(frozen=True)
class Assessment:
    """The verdict so far; `figures` and `calls` are the evidence behind it."""

    decision: Decision
    limiting: str | None
    reason: str
    now_s: float
    calls: list[SloCall] = field(default_factory=list)
    figures: dict[str, object] = field(default_factory=dict)
    generator_valid: bool = True


def step_schedule(model: TrafficModel, *, rate_rps: float, duration_s: float, seed: int) -> pd.DataFrame:
    """The model's request mix at a constant Poisson rate for `duration_s` seconds.

    The count is fixed at rate x duration and the arrival times are uniform given it (a Poisson
    process conditioned on its count), so a short step offers the rate it is named after instead
    of a draw a few per cent off, while the arrivals stay as bursty as Poisson ones.
    """
    constant = model.model_copy(update={
        "name": f"{model.name or 'mix'}-constant-{rate_rps:g}", "base_rps": float(rate_rps) * SPARE_ROWS,
        "curve": "flat", "events": [], "replay": None, "duration": None,
    })
    count = round(rate_rps * duration_s)
    rows = generate_schedule(constant, seed=seed, duration_s=duration_s).iloc[:count].copy()
    rng = np.random.default_rng([seed, count])
    rows["offset_s"] = np.sort(rng.uniform(0.0, duration_s, len(rows)))
    return rows.reset_index(drop=True)


def live_frame(schedule: pd.DataFrame, parts: pd.DataFrame, now_s: float, *, documents_via_jobs: bool = False
               ) -> pd.DataFrame:
    """Every scheduled request intended before `now_s`, with what is known of it.

    A row without a part is still in flight (NaN `done_s`); a recorded failure without an end
    time is taken to have ended now, the latest it can have.
    """
    merged = merge_requests(schedule, parts, documents_via_jobs=documents_via_jobs)
    recorded = np.zeros(len(merged), dtype=bool)
    rows = parts["row"].to_numpy(dtype=np.int64) if len(parts) else np.empty(0, dtype=np.int64)
    recorded[rows[(rows >= 0) & (rows < len(merged))]] = True
    done = merged["done_s"].to_numpy(dtype=float)
    done = np.where(recorded & np.isnan(done), now_s, done)
    merged["done_s"] = np.where(recorded, done, np.nan)
    merged["latency_ms"] = (merged["done_s"] - merged["intended_s"]) * 1000.0
    return merged[merged["intended_s"].to_numpy() < now_s].reset_index(drop=True)


def completions(frame: pd.DataFrame) -> np.ndarray:
    """End times of every successful answer."""
    done = frame["done_s"].to_numpy(dtype=float)
    return done[frame["ok"].to_numpy(dtype=bool) & ~np.isnan(done)]


def from_send(frame: pd.DataFrame) -> pd.DataFrame:
    """The same requests timed from when they actually left, not from when they were due."""
    shifted = frame.copy()
    sent = shifted["sent_s"].to_numpy(dtype=float)
    shifted["intended_s"] = np.where(np.isnan(sent), shifted["intended_s"].to_numpy(dtype=float), sent)
    shifted["latency_ms"] = (shifted["done_s"] - shifted["intended_s"]) * 1000.0
    return shifted


def _window(frame: pd.DataFrame, rules: StepRules, now_s: float, look: int) -> tuple[pd.DataFrame, tuple[float, float]]:
    start = rules.window[0]
    end = min(rules.look_end(look), now_s)
    intended = frame["intended_s"].to_numpy()
    return frame[(intended >= start) & (intended < end)].reset_index(drop=True), (start, end)


def assess(frame: pd.DataFrame, specs: list[SloSpec], rules: StepRules, now_s: float, *,
           look: int, cpu_max: float = 0.0) -> Assessment:
    """Look `look` of `rules.looks` at `now_s`: pass, fail, invalid or continue (module doc)."""
    final = look >= rules.looks
    measured, window = _window(frame, rules, now_s, look)
    judge = functools.partial(judge_slos, look=look, looks=rules.looks, record_lag_s=rules.record_lag_s,
                              met_error=rules.met_error)
    calls = judge(measured, specs, now_s)
    generator = generator_figures(measured) | {"cpu_max": cpu_max}
    generator_problems = _generator_problems(generator, rules)
    figures = _figures(frame, measured, window, specs, generator)
    missed = [call for call in calls if call.decision == "missed"]
    if generator_problems:
        own = judge(from_send(measured), specs, now_s)
        verdict = _invalid_generator(own, now_s, calls, figures, "the load generator could not keep up: "
                                     + "; ".join(generator_problems))
        if verdict.decision == "fail" or final or missed:
            return verdict
        return Assessment("continue", None, "", now_s, calls, figures, False)
    if missed:
        return Assessment("fail", missed[0].name, _missed_text(missed[0]), now_s, calls, figures)
    achieved_ok = _achieved_ok(figures, rules)
    if all(c.decision == "met" for c in calls) and achieved_ok:
        return Assessment("pass", None, f"every SLO met with {rules.confidence} confidence ({len(calls)}, look {look} of "
                          f"{rules.looks})", now_s, calls, figures)
    if not final:
        return Assessment("continue", None, "", now_s, calls, figures)
    if not achieved_ok:
        return Assessment("fail", THROUGHPUT, f"served {figures['achieved_rps']:.1f} req/s of "
                          f"{figures['offered_rps']:.1f} offered ({100 * cast(float, figures['achieved_share'] or 0):.1f}%, "
                          f"below {100 * rules.min_achieved_share:g}%)", now_s, calls, figures)
    unclear = next(call for call in calls if call.decision != "met")
    return Assessment("fail", unclear.name, f"{unclear.name} not shown met with {rules.confidence} confidence "
                      f"({unclear.samples} requests, {unclear.bad} bad, {unclear.pending} unanswered; "
                      f"{_effective_text(unclear)})", now_s, calls, figures)


def _effective_text(call: SloCall) -> str:
    """How many independent requests the step's requests counted as, against a pass's least."""
    if call.design_effect <= 1.0:
        return f"independent, {call.needed} needed with none bad"
    return (f"clustered: {call.effective_samples} effective requests (design effect {call.design_effect:g}), "
            f"{call.needed} needed with none bad")


def curtailed(frame: pd.DataFrame, schedule: pd.DataFrame, specs: list[SloSpec], rules: StepRules, now_s: float, *,
              cpu_max: float = 0.0) -> Assessment | None:
    """A failure now, when the step's final look can no longer pass; None while it still can.

    An SLO whose bad requests already rule out a pass at the final look, even with every request
    still due in the window good and no design effect (`rushhour.reports.capacity.stepstats.reachable`), ends the
    step "not met" at its end whatever else happens, so the step ends now with that call. This
    is no extra look: the outcome is the one the final look would give, so it spends no error
    and may be checked at every poll.

    The generator is judged the same way. A problem the rest of the window cannot clear (a
    schedule lag or connection wait whose P99 stays past the limit even with every request
    still unsent or due sent on time, a row fired twice, the generator's CPU at its limit) makes
    the final look's generator invalid whatever else happens, so the step ends now as a look
    with an invalid generator calls it: failed on an SLO missed even timed from the actual
    send, else invalid. While the generator is only in doubt, the looks decide.
    """
    start, end = rules.window
    if now_s <= start:
        return None
    measured, window = _window(frame, rules, now_s, rules.looks)
    generator = generator_figures(measured) | {"cpu_max": cpu_max}
    if not len(measured):
        return None
    offsets = schedule["offset_s"].to_numpy(dtype=float)
    due = schedule[(offsets >= now_s) & (offsets < end)]
    judge = functools.partial(judge_slos, look=rules.looks, looks=rules.looks, record_lag_s=rules.record_lag_s,
                              met_error=rules.met_error)
    if _generator_problems(generator, rules):
        if not (settled := _generator_settled(measured, len(due), generator, rules)):
            return None
        return _invalid_generator(judge(from_send(measured), specs, now_s), now_s, judge(measured, specs, now_s),
                                  _figures(frame, measured, window, specs, generator),
                                  "the load generator cannot keep up, whatever the rest of the step brings: "
                                  + "; ".join(settled))
    calls = judge(measured, specs, now_s)
    for spec, call in zip(specs, calls, strict=True):
        remaining = int(slo_scope(due, pd.Series("", index=due.index), spec).sum())
        if not reachable(call, spec.allowed_bad_share, remaining, rules.looks, rules.met_error):
            return Assessment("fail", call.name, _unreachable_text(call, remaining), now_s, calls,
                              _figures(frame, measured, window, specs, generator))
    return None


def _generator_settled(measured: pd.DataFrame, due: int, generator: dict[str, Any], rules: StepRules) -> list[str]:
    """The generator's problems that no later request can clear: its lag and connection-wait P99
    recomputed with every request not yet recorded as sent, and the `due` ones still to come,
    taken as sent on time (the best the rest of the window can do: more values at zero only
    lower a P99); duplicates and the CPU's peak only ever grow."""
    unsent = measured["sent_s"].isna().to_numpy()
    lag = schedule_lag_ms(measured)
    wait = measured["pool_wait_ms"].to_numpy(dtype=float) if "pool_wait_ms" in measured else np.full(len(lag), np.nan)
    zeros = np.zeros(int(unsent.sum()) + due)
    best = dict(generator)
    best["lag_p99_ms"] = percentile_or_none(np.concatenate([lag[~unsent], zeros]), 99)
    best["pool_wait_p99_ms"] = percentile_or_none(np.concatenate([wait[~unsent], zeros]), 99)
    return _generator_problems(best, rules)


def _invalid_generator(own: list[SloCall], now_s: float, calls: list[SloCall], figures: dict[str, object],
                       reason: str) -> Assessment:
    """A look whose generator is invalid: failed on an SLO missed even timed from the actual send
    (`own`, the service failed whatever the generator did), else invalid for `reason`."""
    missed = next((call for call in own if call.decision == "missed"), None)
    if missed is not None:
        return Assessment("fail", missed.name, f"{missed.name} missed even timed from the actual send, so the "
                          "service failed whatever the generator did", now_s, calls, figures, False)
    return Assessment("invalid", GENERATOR, reason, now_s, calls, figures, False)


def _figures(frame: pd.DataFrame, measured: pd.DataFrame, window: tuple[float, float], specs: list[SloSpec],
             generator: dict[str, Any]) -> dict[str, object]:
    """A verdict's evidence: the step's figures over `measured`, the generator's, the achieved share."""
    figures = step_figures(measured, window=window, completions=completions(frame), specs=specs)
    return figures | generator | {"achieved_share": _achieved_share(frame, measured, window)}


def _unreachable_text(call: SloCall, remaining: int) -> str:
    if call.bad == 0:
        return (f"{call.name} cannot be shown met in this step: its {call.samples + remaining} requests are too few "
                "even if every one is good")
    return (f"{call.name} can no longer be shown met in this step: {call.bad} of {call.samples} requests bad so far, "
            f"too many even if the {remaining} still due are all good")


def _generator_problems(generator: dict[str, Any], rules: StepRules) -> list[str]:
    """The same three checks as a drill's report: lag, connection waits, duplicates; and CPU."""
    problems = []
    limit = rules.max_lag_p99_ms
    lag, wait = generator.get("lag_p99_ms"), generator.get("pool_wait_p99_ms")
    if lag is not None and lag > limit:
        problems.append(f"schedule lag P99 {lag:.1f} ms is above the {limit:g} ms limit")
    if wait is not None and wait > limit:
        problems.append(f"connection-pool wait P99 {wait:.1f} ms is above the {limit:g} ms limit")
    if generator.get("duplicates"):
        problems.append(f"{generator['duplicates']} request(s) were fired more than once")
    if float(generator.get("cpu_max") or 0.0) >= CPU_SATURATED:
        problems.append(f"generator CPU peaked at {100 * float(generator['cpu_max']):.0f}%")
    return problems


def _achieved_share(frame: pd.DataFrame, measured: pd.DataFrame, window: tuple[float, float]) -> float | None:
    """Answers delivered in the window over the requests that, at the median latency, were due to
    be answered in it: the flow in against the flow out, without the edge a mid-step look has."""
    start, end = window
    ok = measured["ok"].to_numpy(dtype=bool) & measured["done_s"].notna().to_numpy()
    lag_s = float(np.median(measured["latency_ms"].to_numpy(dtype=float)[ok])) / 1000.0 if ok.any() else 0.0
    intended = frame["intended_s"].to_numpy(dtype=float)
    due = int(((intended >= start - lag_s) & (intended < end - lag_s)).sum())
    done = completions(frame)
    served = int(((done >= start) & (done < end)).sum())
    return served / due if due else None


def _achieved_ok(figures: dict[str, object], rules: StepRules) -> bool:
    """At least the share of the offered rate, give or take two standard deviations of a count:
    a few answers either side of the window's edges are noise, a service that falls behind is not."""
    share, requests = figures["achieved_share"], figures.get("requests")
    if not isinstance(share, float) or not isinstance(requests, int) or requests == 0:
        return True
    return share >= rules.min_achieved_share - 2.0 / math.sqrt(requests)


def _missed_text(call: SloCall) -> str:
    if call.kind == "latency":
        bound = "its lower bound is past the threshold" if call.lower is None else f"lower bound {call.lower:,.0f} ms"
        return f"{call.name} ({call.objective_text}) missed: {bound}, {call.bad} of {call.samples} bad"
    return (f"{call.name} ({call.objective_text}) missed: {call.bad} of {call.samples} bad "
            f"(bounds {_pct(call.lower)} to {_pct(call.upper)})")


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{100 * value:.2f}%"
