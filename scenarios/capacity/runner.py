"""One capacity job end to end: boot the target, hold each condition, search, write, render.

The job keeps one run's order (`rushhour.scenarios.run.lifecycle.RunLifecycle`): each condition is
released in its search's `finally`, while the server is still up; the teardown then stops the
server and writes capacity.json and capacity.html whatever happened, so an aborted or interrupted
search still leaves its steps on disk (`rushhour.scenarios.capacity.document` assembles them).
Before the first step one probe request goes through the scenario's protocol, as a drill's does.
The exit code follows the public contract: 0 every condition's capacity meets --require, 1 one
does not (or even the lowest rate failed), 2 the target does not speak the scenario's protocol,
3 generator-bound, interrupted (Ctrl-C, SIGTERM, SIGHUP: see `rushhour.scenarios.capacity.interrupt`) or
the target failed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx

from rushhour.kernel.contract import ExitCode
from rushhour.scenarios.capacity.anchor import STEP_ANCHOR_S, Anchor
from rushhour.scenarios.capacity.bracket import plan_from_throughput
from rushhour.scenarios.capacity.conditions import (
    HEALTHY,
    N_MINUS_ONE,
    Condition,
    ConditionError,
    ExperimentHeld,
    Healthy,
    NMinusOne,
)
from rushhour.scenarios.capacity.document import document_of, write_document
from rushhour.scenarios.capacity.interrupt import interruptible
from rushhour.scenarios.capacity.job import (
    CapacityJob,
    confirm_rules_for,
    opened_before,
    retry_rules_for,
    retry_text,
    step_rules,
    with_retry,
)
from rushhour.scenarios.capacity.pool_status import settle
from rushhour.scenarios.capacity.record import condition_entry, step_entry, verdict_of
from rushhour.scenarios.capacity.search import SearchResult, StepVerdict, search
from rushhour.scenarios.capacity.stepper import StepRecord, StepRunner
from rushhour.scenarios.capacity.steps import StepRules
from rushhour.scenarios.capacity.target import Target, open_target
from rushhour.scenarios.capacity.targetprobe import probe_capacity_target
from rushhour.scenarios.capacity.throughput import measure_throughput
from rushhour.scenarios.protocols.admission import admitted_client
from rushhour.scenarios.protocols.probe import ProbeError
from rushhour.scenarios.run.lifecycle import ABORTING, RunLifecycle

__all__ = ["CapacityOutcome", "CapacityRun", "run_capacity"]

EXIT_OK, EXIT_BELOW, EXIT_BAD_INPUT, EXIT_INVALID = ExitCode.OK, ExitCode.FAILED, ExitCode.BAD_INPUT, ExitCode.INVALID


@dataclass(frozen=True)
class CapacityOutcome:
    """What the command prints and exits with."""

    document: dict[str, Any]
    exit_code: int
    out_dir: Path


def _condition(name: str, job: CapacityJob, target: Target) -> Condition:
    if name == HEALTHY:
        return Healthy()
    if name == N_MINUS_ONE:
        # a server this job booted stops after its last condition: no need to wait for the node then
        last = name == job.conditions[-1]
        return NMinusOne(target.url, target.token, wait_ready=target.server is None or not last)
    path = Path(name)
    experiment = path if path.is_file() else job.base_dir / path
    return ExperimentHeld(experiment.resolve(), target.url, target.token, job.out_dir / "chaos")


def _admin_post(target: Target, path: str) -> bool:
    """`POST /admin/{path}` on a target whose admin token the job holds; True when it answered 2xx."""
    if not target.token:
        return False
    try:
        with admitted_client(timeout=10.0) as client:
            answer = client.post(f"{target.url}/admin/{path}", headers={"Authorization": f"Bearer {target.token}"})
    except httpx.HTTPError:
        return False
    return answer.is_success


def _flush_cache(target: Target) -> None:
    _admin_post(target, "cache/flush")


def _keep_cache(target: Target) -> None:
    """The cache every step of the search starts from: what the throughput probe left in it (the
    probe starts from an empty one), else empty."""
    settle(target.url)
    _admin_post(target, "cache/save")


def _start_cache(target: Target) -> None:
    """Return the cache to the one the search kept, so repeated texts favour no step over another
    (a cache that only grew would make each step's work lighter than the one before); a server
    that cannot restore one is flushed instead."""
    if not _admin_post(target, "cache/restore"):
        _flush_cache(target)


def _cancel_jobs(target: Target) -> None:
    """Stop the document jobs the last step left running, on a server this job booted (every job
    there is the search's own): Locust stops following them when a step ends, and their remaining
    segments would only make the next step wait. A target given by URL is left alone."""
    if target.server is not None:
        _admin_post(target, "jobs/cancel")  # when it fails, the drain after it still waits for them


def _ready_for_step(target: Target, condition: Condition) -> float:
    """Before each step: stop the documents the last one left, wait for what else it left queued to
    drain, give back the cache the search kept, and check the condition still holds. Returns the
    seconds the drain took."""
    _cancel_jobs(target)
    waited = settle(target.url)
    _start_cache(target)
    condition.check()
    return waited


def _before_step(runner: StepRunner, rate: float, target: Target, condition: Condition) -> float:
    """Before a step at `rate`: for one that goes on with the load of the pass just seen, the
    condition's check and the kept cache given back (the queue stays as that load left it, so
    nothing is cancelled or drained); for any other, the held load stopped, then
    `_ready_for_step`. Returns the seconds drained."""
    if runner.continues(rate):
        condition.check()
        _start_cache(target)  # else the pass's window would have warmed the cache of the step confirming it
        return 0.0
    runner.release()
    return _ready_for_step(target, condition)


def _fresh_step(runner: StepRunner | None, rate: float, target: Target, condition: Condition) -> StepRecord:
    """A step at `rate` from a drained queue, whatever load was held (the search's anchor at its end)."""
    assert runner is not None
    runner.release()
    _ready_for_step(target, condition)
    return runner.run(rate)


@contextmanager
def _ruled(runner: StepRunner, rules: StepRules) -> Iterator[StepRunner]:
    """`runner` stepping with `rules` whatever its rate, its own rules back afterwards."""
    sized = runner.rules_at
    runner.rules_at = lambda _rate: rules
    try:
        yield runner
    finally:
        runner.rules_at = sized


def _short_anchor(runner: StepRunner | None, job: CapacityJob, rate: float, target: Target,
                  condition: Condition) -> StepRecord:
    """A `STEP_ANCHOR_S` window at `rate` from a drained queue (the `steps` drift check's window
    after a step); nothing of its load is held after it. The window is measured whole, one look at
    its end and no curtailing: at a rate where a short window cannot show the objective met it
    would otherwise end at its first check, with too few answers to compare."""
    assert runner is not None
    short = dataclasses.replace(step_rules(STEP_ANCHOR_S, job.scenario.load.max_lag_p99_ms, job.rules.met_error),
                                looks=1, curtail=False)
    try:
        with _ruled(runner, short):
            return _fresh_step(runner, rate, target, condition)
    finally:
        runner.release()


def _planned(job: CapacityJob, target: Target, label: str, say: Callable[[str], None]
             ) -> tuple[CapacityJob, dict[str, Any] | None]:
    """With `job.probe`: the saturated throughput under the condition held, and the job's rates and
    step length planned around it (the job unchanged when the probe gives no plan)."""
    if not job.probe:
        return job, None
    settle(target.url)
    _flush_cache(target)
    saturation = measure_throughput(job, target.url)
    # steps no longer than the job's own: the plan's lowest rate is then the job's, and a search
    # that ends below it is not worth repeating over the job's whole range
    plan = plan_from_throughput(saturation.throughput_rps, job.floors, precision=job.settings.precision, slos=job.slos,
                                longest_s=job.rules.measure_s)
    levels = ", ".join(f"{level.users}: {level.ok_rps:.1f}" for level in saturation.levels)
    say(f"[{label}] throughput probe, closed loop (users: answers/s) {levels} in {saturation.seconds:.0f} s")
    if plan is None:
        say(f"[{label}] the probe gives no plan; searching {job.settings.min_rps:g}-{job.settings.max_rps:g} req/s")
        return job, {"probe": saturation.as_dict(), "plan": None}
    settings = dataclasses.replace(plan.settings, generator_limits=job.settings.generator_limits)
    if job.known_fail is not None:  # nothing at or above a rate just seen failing
        if job.known_fail.rate_rps <= settings.min_rps:
            say(f"[{label}] {job.known_fail.rate_rps:.1f} req/s, which just failed, is at or below the plan's lowest "
                f"rate; searching {job.settings.min_rps:g}-{job.settings.max_rps:g} req/s")
            return job, {"probe": saturation.as_dict(), "plan": None}
        settings = dataclasses.replace(settings, max_rps=min(settings.max_rps, job.known_fail.rate_rps))
    start = plan.start_rps if job.known_fail is None else min(plan.start_rps, settings.max_rps / settings.growth)
    say(f"[{label}] searching {settings.min_rps:.1f}-{settings.max_rps:.1f} req/s from "
        f"{start:.1f} ({start / plan.throughput_rps:.2f} of the throughput), each step as long "
        f"as its rate needs ({plan.measure_at(start):g} s at the first)")
    planned = dataclasses.replace(job, settings=settings, start_rps=start, measure_at=plan.measure_at,
                                  warmup_at=plan.warmup_at,
                                  rules=step_rules(plan.measure_at(start), job.scenario.load.max_lag_p99_ms,
                                                   job.rules.met_error))
    applied = {"start_rps": round(start, 2), "max_rps": round(settings.max_rps, 2),
               "step_duration_s": round(plan.measure_at(start), 1)}
    return planned, {"probe": saturation.as_dict(), "plan": plan.as_dict() | applied}


def _rules_at(job: CapacityJob) -> Callable[[float], StepRules] | None:
    """Each step's rules from its rate, for a job whose steps are sized to their rate."""
    measure_at, max_lag, met_error = job.measure_at, job.scenario.load.max_lag_p99_ms, job.rules.met_error
    return None if measure_at is None else (
        lambda rate: step_rules(measure_at(rate), max_lag, met_error, warmup_s=job.warmup_s_at(rate)))


def _search_condition(job: CapacityJob, target: Target, name: str, say: Callable[[str], None], *,
                      start_rps: float | None, serves_jobs: bool) -> dict[str, Any]:
    began = time.monotonic()
    label = Path(name).stem if name not in (HEALTHY, N_MINUS_ONE) else name
    condition = _condition(name, job, target)
    entries: list[dict[str, Any]] = []
    result = SearchResult() if job.known_fail is None else SearchResult.after(job.known_fail)
    runner: StepRunner | None = None
    anchor, drift = Anchor(check_kind=job.drift_check), None

    def step(rate: float) -> StepVerdict:
        assert runner is not None
        drained_s = _before_step(runner, rate, target, condition)
        retry, revisit = retry_rules_for(result, job.retry_rules, rate), opened_before(result, rate)
        if retry is not None:
            say(f"[{label}] {retry_text(result.steps[-1], retry, job.retry_max_s)}")
        # the retry of a step that ended open, or a step at a rate that passed on one: a longer window
        longer = retry if retry is not None else confirm_rules_for(result, job.retry_rules, rate, max_s=job.retry_max_s)
        if longer is not None:
            with _ruled(runner, longer):
                record = runner.run(rate)
        else:
            record = runner.run(rate)
        anchor.keep(record)
        entries.append(step_entry(record, rules=record.rules, slots_per_node=target.slots_per_node,
                                  cost_model=job.cost_model, settle_s=drained_s))
        verdict = with_retry(verdict_of(record), ran_s=record.rules.measure_s, was_retry=retry is not None,
                             retry=job.retry_rules, max_s=job.retry_max_s, revisit=revisit)
        went_on = f", going on from step {record.continues}'s load" if record.continues else ""
        took_s = record.assessment.now_s - (record.rules.warmup_s if record.continues else 0.0)  # its own seconds
        say(f"[{label}] step {record.index}: {rate:.1f} req/s for {record.rules.measure_s:g} s{went_on} -> "
            f"{verdict.verdict}" + (f" ({verdict.limiting})" if verdict.limiting else "")
            + f" after {took_s:.0f} s{' (early)' if record.early else ''}: {verdict.reason}")
        anchor.after_step(record, lambda rate: _short_anchor(runner, job, rate, target, condition),
                          say=lambda text: say(f"[{label}] {text}"))
        return verdict

    say(f"[{label}] holding the condition ...")
    interrupted = False
    planning: dict[str, Any] | None = None
    condition.hold()
    try:
        job, planning = _planned(job, target, label, say)
        if not job.probe:
            _flush_cache(target)
        _keep_cache(target)
        runner = StepRunner(url=target.url, mix=job.mix, specs=job.slos, load=job.scenario.load, rules=job.rules,
                            work_dir=job.out_dir / label, seed=job.seed, target=job.protocol, serves_jobs=serves_jobs,
                            rules_at=_rules_at(job), chain=job.settings.confirm)
        search(step, job.settings, start_rps=job.start_rps if planning and planning["plan"] else start_rps,
               into=result)
        if job.settings.confirm and anchor.wanted(result):
            drift = anchor.check(lambda rate: _fresh_step(runner, rate, target, condition), say=lambda text: say(
                f"[{label}] {text}"))
            drift = anchor.summary(drift) if anchor.check_kind == "steps" else drift
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if runner is not None:
            runner.release()
        condition.release()
    entry = condition_entry(label, result, entries, require_rps=job.require_rps, wall_s=time.monotonic() - began,
                            machine_drift=drift)
    return entry | {"interrupted": interrupted} | (planning or {})


def _exit_code(conditions: list[dict[str, Any]], aborted: str | None, require: float | None) -> int:
    if aborted or any(c["generator_bound"] for c in conditions):
        return EXIT_INVALID
    if any(c["below_min"] for c in conditions):
        return EXIT_BELOW
    if require is not None and any((c["capacity_rps"] or 0.0) < require for c in conditions):
        return EXIT_BELOW
    return EXIT_OK


@dataclass
class CapacityRun(RunLifecycle[CapacityOutcome]):
    """One capacity job in the order of `rushhour.scenarios.run.lifecycle.RunLifecycle`: the folder
    made (a folder that holds files is written into), Ctrl-C, SIGTERM and SIGHUP handled by
    `interruptible`, the target booted and probed, each condition searched; then the server stopped and the document
    written whatever happened. A target that does not speak the scenario's protocol is recorded as
    the misfit (exit 2)."""

    aborting: ClassVar[tuple[type[Exception], ...]] = (*ABORTING, ConditionError, ProbeError)
    job: CapacityJob
    say: Callable[[str], None]
    target: Target | None = None
    conditions: list[dict[str, Any]] = field(default_factory=list)
    abort_reason: str | None = None
    interrupted: bool = False
    misfit: bool = False
    document: dict[str, Any] | None = None
    _began: float = field(default_factory=time.monotonic)
    _signals: ExitStack = field(default_factory=ExitStack)
    _received: list[str] = field(default_factory=list)
    _unwritten: Exception | None = None

    def _claim(self) -> None:
        self.job.out_dir.mkdir(parents=True, exist_ok=True)

    def _open(self) -> None:
        self._received = self._signals.enter_context(interruptible(self.say))

    def _close(self) -> None:
        self._signals.close()

    def _boot_and_load(self) -> None:
        job = self.job
        self.target = open_target(job, say=self.say)
        serves_jobs = probe_capacity_target(job, self.target.url, say=self.say)
        for name in job.conditions:
            # a later condition starts where the first one ended: a fault rarely adds capacity, and
            # walking down from there takes fewer steps than bracketing up from the minimum again
            start = job.start_rps if not self.conditions else self.conditions[0]["capacity_rps"] or job.start_rps
            self.conditions.append(_search_condition(job, self.target, name, self.say, start_rps=start,
                                                     serves_jobs=serves_jobs))
            if self.conditions[-1]["interrupted"]:
                self._interrupted()
                return

    def _aborted(self, error: Exception) -> None:
        self.misfit = isinstance(error, ProbeError)
        self.abort_reason = f"the target does not fit its protocol: {error}" if self.misfit else str(error)

    def _interrupted(self) -> None:
        self.interrupted = True
        self.abort_reason = "interrupted by the operator (Ctrl-C)"

    def _stop_steps(self) -> tuple[Callable[[], object], ...]:
        return (self._stop_server,)  # each condition was released in its search, while the server was up

    def _stop_server(self) -> None:
        if self.target is not None:
            self.target.close()

    def _write_results(self) -> None:
        if self._received and self.abort_reason and self._received[0] != "SIGINT":
            self.abort_reason = f"interrupted by {self._received[0]}"
        try:
            self.document = document_of(self.job, self.target, self.conditions, self.abort_reason,
                                        time.monotonic() - self._began)
            write_document(self.job, self.document)
        except Exception as exc:
            self._unwritten = exc  # raised by the report, once the teardown has said it
            raise

    def _report(self) -> CapacityOutcome:
        if self._unwritten is not None:
            raise self._unwritten
        assert self.document is not None  # written, else the write's error was raised above
        code = EXIT_BAD_INPUT if self.misfit else _exit_code(self.conditions, self.abort_reason, self.job.require_rps)
        return CapacityOutcome(self.document, code, self.job.out_dir)

    def _say(self, text: str) -> None:
        self.say(text)


def run_capacity(job: CapacityJob, *, say: Callable[[str], None]) -> CapacityOutcome:
    """Run every condition's search and write capacity.json and capacity.html into job.out_dir."""
    return CapacityRun(job, say).run()
