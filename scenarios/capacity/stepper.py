"""Running one step for real: a Locust session fires the step's schedule, `assess` judges it at
each planned look, and the step ends at the first look that calls it (or at its deadline).

The loop is bounded twice: by the step's own deadline on the step clock and by the load
session's deadline, so a silent target or a stuck generator costs one step, never the search.

A search confirms its figure with a second step at the same rate, and that step often comes right
after the pass (the search started one move above the knee, failed there and passed one move
below). With `StepRunner.chain`, a passing step leaves its load running until the next step is
asked for: at the same rate, that step is the same load going on, judged over a window that
starts where the pass's window ended, so it needs no new generator, no drain and no warm-up (the
service is already in its steady state at that rate). Its requests are disjoint from the pass's,
and it keeps its own looks and error spending; the capacity runner gives the kept cache back at
its start, as before every step. At another rate, or when the search ends, the held load is
stopped first.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rushhour.kernel.atomic import write_parquet_atomic
from rushhour.kernel.contract import SCHEDULE_FILE
from rushhour.reports.schema import SloSpec
from rushhour.scenarios.capacity.pool_status import StatusSampler
from rushhour.scenarios.capacity.search import GENERATOR
from rushhour.scenarios.capacity.steps import (
    Assessment,
    StepRules,
    assess,
    curtailed,
    live_frame,
    look_times,
    step_schedule,
)
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.locust import LoadError
from rushhour.scenarios.load.session import LoadSession
from rushhour.scenarios.spec.model import LoadSpec
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.traffic_models.model import TrafficModel

__all__ = ["StepRecord", "StepRunner"]

POLL_S = 0.5
MAX_LATE_POLLS = 20
ABORT_GRACE_S = 0.5
CURTAIL_EVERY_S = 2.0
"""How often a step asks whether it can still pass (`steps.curtailed`): each ask merges and judges
the step so far (about 50 ms of CPU for 1,500 requests and 7 SLOs), which a poll every 0.5 s would
take from the service under test."""


class StepSession(LoadSession):
    """A LoadSession that a decided step can end at once.

    LoadSession.stop gives Locust its graceful stop, during which the open-loop firer keeps
    sending for up to Locust's stop timeout; a step whose verdict is already clear wants the
    traffic to end now, and the rows still buffered in the workers are no longer needed.
    """

    def abort(self) -> None:
        if self._proc is not None:
            self._proc.stop(grace_s=ABORT_GRACE_S)


@dataclass(frozen=True)
class StepRecord:
    """One step as it is kept: the rate, the verdict and its evidence, and the pools' state."""

    index: int
    rate_rps: float
    assessment: Assessment
    requests: pd.DataFrame
    samples: pd.DataFrame
    wall_s: float
    early: bool
    work_dir: Path
    rules: StepRules
    """The step's own length and looks (steps sized to their rate differ)."""
    continues: int | None = None
    """The index of the passing step whose load this one went on with (`StepRunner.chain`); None
    for a step started afresh."""


@dataclass
class _Held:
    """A passing step whose load is still running, in case the next step is at its rate."""

    record: StepRecord
    session: StepSession
    sampler: StatusSampler
    schedule: pd.DataFrame
    parts: list[pd.DataFrame]
    t0: float


@dataclass
class StepRunner:
    """Fires steps of one condition at `url`; each step gets its own folder and seed."""

    url: str
    mix: TrafficModel
    specs: list[SloSpec]
    load: LoadSpec
    rules: StepRules
    work_dir: Path
    seed: int = 0
    index: int = 0
    target: TargetProtocol | None = None
    """The protocol the target speaks; None: the rushhour protocol."""
    serves_jobs: bool = False
    """Whether the target's probe found the jobs API (`rushhour.scenarios.capacity.targetprobe`)."""
    rules_at: Callable[[float], StepRules] | None = None
    """A step's rules at a given rate, when steps are sized to their rate; None: `rules` for every step."""
    chain: bool = False
    """Leave a passing step's load running; a next step at the same rate goes on with it (module doc)."""
    _held: _Held | None = field(default=None, init=False, repr=False)

    def continues(self, rate_rps: float) -> bool:
        """Whether a step at `rate_rps` goes on with the load of the step that just passed."""
        return self._held is not None and self._held.record.rate_rps == rate_rps

    def release(self) -> None:
        """Stop a held step's load; nothing when none is held."""
        held, self._held = self._held, None
        if held is not None:
            held.session.abort()
            held.sampler.stop()

    def run(self, rate_rps: float) -> StepRecord:
        """One step at `rate_rps`: schedule, fire, judge as results come in, stop (or, with `chain`,
        hold a pass's load; a step at the held rate goes on with it)."""
        if self.continues(rate_rps):
            return self._go_on()
        self.release()
        self.index += 1
        began = time.monotonic()
        rules = self.rules_at(rate_rps) if self.rules_at is not None else self.rules
        step_dir = self.work_dir / f"step-{self.index:02d}"
        step_dir.mkdir(parents=True, exist_ok=True)
        span_s = rules.schedule_s + (rules.measure_s if self.chain else 0.0)  # room for a second window
        schedule = step_schedule(self.mix, rate_rps=rate_rps, duration_s=span_s, seed=self.seed + self.index)
        write_parquet_atomic(schedule, step_dir / SCHEDULE_FILE)
        session = StepSession(self._settings(step_dir, schedule, span_s))
        sampler: StatusSampler | None = None
        parts: list[pd.DataFrame] = []
        verdict: Assessment | None = None
        t0 = 0.0
        try:
            t0 = session.start()
            sampler = StatusSampler(self.url, origin=t0).start()
            verdict = self._watch(session, schedule, parts, t0, rules)
        except LoadError as exc:
            verdict = Assessment("invalid", GENERATOR, f"the load generator failed: {exc}", 0.0)
        finally:
            hold = self.chain and sampler is not None and verdict is not None and verdict.decision == "pass"
            if not hold:
                session.abort()
                samples = sampler.stop() if sampler is not None else pd.DataFrame()
        assert verdict is not None
        if hold:
            assert sampler is not None
            samples = sampler.snapshot()
        parts.append(session.poll())
        record = self._record(rate_rps, verdict, schedule, parts, samples, began, step_dir, rules, session)
        if hold:
            assert sampler is not None
            self._held = _Held(record, session, sampler, schedule, parts, t0)
        return record

    def _go_on(self) -> StepRecord:
        """The next step at the held step's rate: the same load goes on, judged over the window of
        that rate's length that starts where the held step's window ended."""
        held, self._held = self._held, None
        assert held is not None
        self.index += 1
        began = time.monotonic()
        first = held.record
        rules = first.rules.following(first.assessment.now_s)
        try:
            verdict = self._watch(held.session, held.schedule, held.parts, held.t0, rules)
        except LoadError as exc:
            verdict = Assessment("invalid", GENERATOR, f"the load generator failed: {exc}", time.time() - held.t0)
        finally:
            held.session.abort()
            samples = held.sampler.stop()
        held.parts.append(held.session.poll())
        return self._record(first.rate_rps, verdict, held.schedule, held.parts, samples, began, first.work_dir, rules,
                            held.session, continues=first.index)

    def _record(self, rate_rps: float, verdict: Assessment, schedule: pd.DataFrame, parts: list[pd.DataFrame],
                samples: pd.DataFrame, began: float, step_dir: Path, rules: StepRules, session: StepSession, *,
                continues: int | None = None) -> StepRecord:
        frame = live_frame(schedule, pd.concat(parts, ignore_index=True), verdict.now_s,
                           documents_via_jobs=session.settings.jobs_in_use)
        early = verdict.now_s < rules.schedule_s
        return StepRecord(self.index, rate_rps, verdict, frame, samples, time.monotonic() - began, early, step_dir,
                          rules, continues)

    def _settings(self, step_dir: Path, schedule: pd.DataFrame, span_s: float) -> LoadSettings:
        return LoadSettings.from_spec(
            self.load, schedule, host=self.url, schedule_path=step_dir / SCHEDULE_FILE, work_dir=step_dir / "load",
            duration_s=span_s, target=self.target, mode="open",
            documents_via_jobs=self.load.documents_via_jobs and self.serves_jobs,
        )

    def _watch(self, session: LoadSession, schedule: pd.DataFrame, parts: list[pd.DataFrame],
               t0: float, rules: StepRules | None = None) -> Assessment:
        """Poll the session; judge at each planned look (`steps.look_times`), and at the end; at
        most every CURTAIL_EVERY_S, end the step once its final look can no longer pass (`steps.curtailed`).

        An interim look is taken at its planned time, or sooner once every request it covers has
        been answered and recorded: its data are then final, so the call is the one the planned
        time would make. The last look is taken at the window's end once nothing in it is
        pending; before that, only a call that already holds with every pending request counted
        against it (a pass, or an SLO missed) ends the step.
        """
        rules = rules or self.rules
        cpu: list[float] = []
        interim = look_times(rules, self.specs)
        # a generator whose schedule is spent may end before the step does (its last request due
        # a moment before the end, its clock started just before t0): only an end before the
        # last request was due is a generator that stopped early
        last_due = min(float(schedule["offset_s"].max()), rules.schedule_s) if len(schedule) else 0.0
        look = 1
        curtail_at = 0.0
        for _ in range(math.ceil(rules.deadline_s / POLL_S) + MAX_LATE_POLLS):
            time.sleep(POLL_S)
            now = time.time() - t0
            parts.append(session.poll())
            cpu.append(session.cpu_percent() / 100.0)
            done = session.finished()
            if done and now < last_due:
                return Assessment("invalid", GENERATOR, "the load generator stopped before the step's end; "
                                  "see its locust.log", now)
            final = now >= rules.schedule_s
            at_look = final or (look < rules.looks and now >= rules.look_end(look) + rules.record_lag_s)
            curtail = rules.curtail and now > rules.window[0] and now >= curtail_at
            if not (at_look or curtail):
                continue
            frame = live_frame(schedule, pd.concat(parts, ignore_index=True), now,
                               documents_via_jobs=session.settings.jobs_in_use)
            cpu_max = max(cpu[1:], default=0.0)
            if curtail:
                curtail_at = now + CURTAIL_EVERY_S
                if (cut := curtailed(frame, schedule, self.specs, rules, now, cpu_max=cpu_max)) is not None:
                    return cut
            if not at_look:
                continue
            judge = functools.partial(assess, frame, self.specs, rules, now, cpu_max=cpu_max)
            if final:
                verdict = judge(look=rules.looks)
                settled = done or now >= rules.deadline_s or not _pending(frame, rules.window)
                if settled or _decisive(verdict):
                    return verdict
                continue
            if now < interim[look - 1] and _pending(frame, (rules.window[0], rules.look_end(look))):
                continue
            verdict = judge(look=look)
            if verdict.decision != "continue":
                return verdict
            look += 1
        return Assessment("invalid", GENERATOR, "the step found no verdict before its deadline (the runner "
                          "itself fell behind)", time.time() - t0)


def _decisive(verdict: Assessment) -> bool:
    """A last-look call that pending requests cannot change: a pass (every SLO met with each of
    them counted bad), or a failure on an SLO missed (with each of them counted good)."""
    missed = {call.name for call in verdict.calls if call.decision == "missed"}
    return verdict.decision == "pass" or (verdict.decision == "fail" and verdict.limiting in missed)


def _pending(frame: pd.DataFrame, span: tuple[float, float]) -> bool:
    """Whether any request due in `span` (step clock) is still unanswered."""
    start, end = span
    intended = frame["intended_s"].to_numpy()
    inside = (intended >= start) & (intended < end)
    return bool(np.isnan(frame["done_s"].to_numpy(dtype=float))[inside].any())
