"""Running one step for real: a Locust session fires the step's schedule, `assess` judges it at
each planned look, and the step ends at the first look that calls it (or at its deadline).

The loop is bounded twice: by the step's own deadline on the step clock and by the load
session's deadline, so a silent target or a stuck generator costs one step, never the search.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kernel.contract import SCHEDULE_FILE
from reports.schema import SloSpec
from scenarios.capacity.probe import StatusSampler
from scenarios.capacity.search import GENERATOR
from scenarios.capacity.steps import (
    Assessment,
    StepRules,
    assess,
    curtailed,
    live_frame,
    look_times,
    step_schedule,
)
from scenarios.load.locust import LoadError
from scenarios.load.session import LoadSession
from scenarios.load.settings import LoadSettings
from scenarios.spec.model import LoadSpec
from scenarios.spec.target import TargetProtocol
from traffic_models.model import TrafficModel

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
    """Whether the target's probe found the jobs API (`scenarios.capacity.targetprobe`)."""
    rules_at: Callable[[float], StepRules] | None = None
    """A step's rules at a given rate, when steps are sized to their rate; None: `rules` for every step."""

    def run(self, rate_rps: float) -> StepRecord:
        """One step at `rate_rps`: schedule, fire, judge as results come in, stop."""
        self.index += 1
        began = time.monotonic()
        rules = self.rules_at(rate_rps) if self.rules_at is not None else self.rules
        step_dir = self.work_dir / f"step-{self.index:02d}"
        step_dir.mkdir(parents=True, exist_ok=True)
        schedule = step_schedule(self.mix, rate_rps=rate_rps, duration_s=rules.schedule_s,
                                 seed=self.seed + self.index)
        schedule.to_parquet(step_dir / SCHEDULE_FILE, index=False)
        session = StepSession(self._settings(step_dir, schedule, rules))
        sampler: StatusSampler | None = None
        parts: list[pd.DataFrame] = []
        try:
            t0 = session.start()
            sampler = StatusSampler(self.url, origin=t0).start()
            verdict = self._watch(session, schedule, parts, t0, rules)
        except LoadError as exc:
            verdict = Assessment("invalid", GENERATOR, f"the load generator failed: {exc}", 0.0)
        finally:
            session.abort()
            samples = sampler.stop() if sampler is not None else pd.DataFrame()
        parts.append(session.poll())
        frame = live_frame(schedule, pd.concat(parts, ignore_index=True), verdict.now_s,
                           documents_via_jobs=session.settings.jobs_in_use)
        early = verdict.now_s < rules.schedule_s
        return StepRecord(self.index, rate_rps, verdict, frame, samples, time.monotonic() - began, early, step_dir,
                          rules)

    def _settings(self, step_dir: Path, schedule: pd.DataFrame, rules: StepRules) -> LoadSettings:
        return LoadSettings.from_spec(
            self.load, schedule, host=self.url, schedule_path=step_dir / SCHEDULE_FILE, work_dir=step_dir / "load",
            duration_s=rules.schedule_s, target=self.target, mode="open",
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
            curtail = now > rules.window[0] and now >= curtail_at
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
