"""One drill, start to finish: boot, load, watch, stop, and always leave results and a report.

The run's order is `rushhour.scenarios.run.lifecycle.RunLifecycle`'s; the order of the stop steps
matters and is the drill's: stop the load, stop the chaos
timeline (its rollbacks need the server up), audit the target for leftover faults, stop the
scraper and the server, audit for leftover processes, then write the results and build the
report, so an aborted or interrupted drill still explains itself. Signals stay handled until
the report is built (`rushhour.scenarios.run.signals`); the results folder is this run's alone
(`rushhour.scenarios.run.resultsdir`); every process of the run is written down as it appears
(`rushhour.scenarios.run.audit.ledger`) and dies with the drill, so even a SIGKILLed drill leaves nothing
running and `rushhour report DIR` can rebuild its results (`rushhour.scenarios.run.rebuild`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from rushhour.kernel.atomic import write_json_atomic, write_parquet_atomic
from rushhour.kernel.contract import (
    EVENTS_FILE,
    REQUESTS_FILE,
    SCHEDULE_FILE,
    SERVER_METRICS_FILE,
    ExitCode,
)
from rushhour.scenarios.generator.settings import DEFAULT_MASTER_BIND, LoadSettings
from rushhour.scenarios.load.health import generator_figures
from rushhour.scenarios.load.locust import LoadError
from rushhour.scenarios.load.merge import merge_to_file
from rushhour.scenarios.load.session import LoadSession
from rushhour.scenarios.run.audit.leakaudit import AUDIT_FILE, LeakAudit
from rushhour.scenarios.run.audit.ledger import LEDGER_FILE, ProcessLedger
from rushhour.scenarios.run.audit.steps import audit_leftovers, audit_target
from rushhour.scenarios.run.chaos.bridge import Timeline, report_skipped_faults, start_chaos
from rushhour.scenarios.run.embedded import EmbeddedServer
from rushhour.scenarios.run.envinfo import machine_facts
from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.run.lifecycle import GENERATOR_COLUMNS, SCHEDULE_GROUP_ROWS, RunLifecycle, claim_folder
from rushhour.scenarios.run.live.progress import ProgressPrinter, RunningTally, progress_line
from rushhour.scenarios.run.live.watch import LiveWatch, Printer
from rushhour.scenarios.run.overhead import drill_overhead
from rushhour.scenarios.run.scraper import StatusScraper, metrics_frame
from rushhour.scenarios.run.signals import SignalGuard
from rushhour.scenarios.run.stopping import stop_reason
from rushhour.scenarios.run.target_events import TARGET_EVENT, TargetEvent, target_event_record
from rushhour.scenarios.run.targetmetrics import TargetMetricsScraper
from rushhour.scenarios.spec.model import dump_scenario
from rushhour.scenarios.spec.plan import DrillPlan
from rushhour.traffic_models.chunked import write_schedule

TICK_S = 0.5
EXIT_INVALID = ExitCode.INVALID


@dataclass(frozen=True)
class RunResult:
    """How the drill ended: exit code, verdict, and where its results are."""

    exit_code: int
    verdict: str
    reason: str
    results_dir: Path


@dataclass
class Drill(RunLifecycle[RunResult]):
    """The state of one running drill (everything the teardown must reach)."""

    plan: DrillPlan
    results_dir: Path
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    server: EmbeddedServer | None = None
    session: LoadSession | None = None
    scraper: StatusScraper | None = None
    target_scraper: TargetMetricsScraper | None = None
    chaos: Timeline | None = None
    events: EventLog | None = None
    stats: RunningTally = field(default_factory=RunningTally)
    abort_reason: str | None = None
    interrupted: bool = False
    t0: float = 0.0
    audit: LeakAudit = field(default_factory=LeakAudit)
    ledger: ProcessLedger | None = None
    live: LiveWatch | None = None  # metrics endpoint and terminal view (rushhour.scenarios.run.live.watch); closed by run()
    remote_workers: int = 0  # across hosts: a Locust master waiting for this many `rushhour worker`s
    master_bind: tuple[str, int] = DEFAULT_MASTER_BIND
    cluster_secret: str | None = field(default=None, repr=False)  # what remote workers must prove
    overhead_check: bool = False  # first measure the harness's own overhead (rushhour.scenarios.run.overhead)
    overhead: dict[str, object] | None = None
    _phases_seen: int = 0
    _audit_s: float = 0.0  # time spent auditing: after the run, so not part of its duration
    _guard: SignalGuard | None = None

    def _claim(self) -> None:
        """Claim the folder (`rushhour.scenarios.run.lifecycle.claim_folder`), then write the schedule."""
        claim_folder(self.results_dir, dump_scenario(self.plan.scenario, rate_scale=self.plan.rate_scale))
        (self.results_dir / "chaos").mkdir(exist_ok=True)
        write_schedule(self.results_dir / SCHEDULE_FILE, self.plan.draw.chunks(SCHEDULE_GROUP_ROWS))

    def _open(self) -> None:
        self.ledger = ProcessLedger(self.results_dir / LEDGER_FILE)
        self._guard = SignalGuard(self._stop_requested, self._say).install()

    def _tearing_down(self) -> None:
        if self._guard is not None:
            self._guard.tearing_down = True
        self._observe()

    def _close(self) -> None:
        if self._guard is not None:
            self._guard.restore()
        if self.live is not None:
            self.live.close()

    def _stop_requested(self, name: str) -> None:
        self.interrupted = True
        self._say(f"{name}: stopping the drill; the results and the report are written first.")

    @property
    def url(self) -> str:
        if self.server is not None:
            return self.server.url
        return str(self.plan.scenario.target.url).rstrip("/")

    def _boot_and_load(self) -> None:
        target = self.plan.scenario.target
        if self.overhead_check:
            self.overhead = drill_overhead(self.plan, self._say)
        if target.embedded is not None:
            self.server = EmbeddedServer(target.embedded, log_path=self.results_dir / "server.log",
                                         base_dir=self.plan.base_dir)
            self._say(f"booting the reference server on {self.server.url} ...")
            try:
                self.server.start()
            finally:
                self._observe()
            self.server.warm(self.plan.scenario.load.languages)
            self._probe_target()
        if self.interrupted:
            return
        self.session = LoadSession(self._load_settings(), cluster_secret=self.cluster_secret)
        if self.remote_workers:
            host, port = self.master_bind
            self._say(f"waiting for {self.remote_workers} worker(s): run `rushhour worker --master HOST:{port}` "
                      f"on each load host (this master listens on {host}:{port}) ...")
        try:
            self.t0 = self.session.start()
        finally:
            self._observe()
        self._open_events()
        self._report_workers()
        report_skipped_faults(self.plan, say=self._say, events=self.events_log)
        if self.live is not None:
            self.live.begin(self.t0, self.events_log, self.url, self.session.control_dir)
        if self.server is not None:
            self.server.anchor_schedules(self.t0)
        self.scraper = StatusScraper(self.url, origin=self.t0, on_server_event=self._server_event,
                                     on_error=self._scraper_error)
        self.scraper.start()
        if target.metrics_url:
            self.target_scraper = TargetMetricsScraper(target.metrics_url, origin=self.t0,
                                                       on_error=self._target_metrics_error)
            self.target_scraper.start()
        self.chaos = start_chaos(self.plan, url=self.url, token=self.server.token if self.server else None,
                                 out_dir=self.results_dir / "chaos", events=self.events_log, t0=self.t0,
                                 live_dir=self.session.parts_dir)
        self._watch()

    def _load_settings(self) -> LoadSettings:
        return LoadSettings.from_spec(
            self.plan.scenario.load, self.plan.facts, host=self.url,
            schedule_path=self.results_dir / SCHEDULE_FILE, work_dir=self.results_dir / "load",
            duration_s=self.plan.duration_s, target=self.plan.scenario.target,
            remote_workers=self.remote_workers, master_bind=self.master_bind,
        )

    def _report_workers(self) -> None:
        """Across hosts: each worker's host, share and clock offset, said and written as an event."""
        workers = self.session.remote_workers() if self.session is not None else []
        for w in workers:
            self._say(f"worker {w['index']} on {w['host']}: {w['rows']} requests, clock offset "
                      f"{w['clock_offset_ms']:+.3f} ms (round trip {w['clock_rtt_ms']:.3f} ms), corrected")
        if workers:
            self.events_log.emit("workers", t_s=0.0, source="harness", workers=workers)

    def _probe_target(self) -> None:
        """The booted server gets the probe a URL target got from the CLI before the run
        (`rushhour.scenarios.run.targetcheck.probe_plan`): one request, the features the scenario uses."""
        from rushhour.scenarios.run.targetcheck import TargetMisfit, probe_plan

        try:
            self.plan = probe_plan(self.plan, self.url, say=self._say)
        except TargetMisfit as exc:
            raise LoadError(str(exc)) from exc

    @property
    def events_log(self) -> EventLog:
        if self.events is None:
            self._open_events()
        assert self.events is not None
        return self.events

    def _open_events(self) -> None:
        self.events = EventLog(self.results_dir / EVENTS_FILE, origin=self.t0 or time.time())
        s = self.plan.scenario
        self.events.emit(
            "run_start", t_s=0.0, scenario=s.name, seed=s.traffic.seed, target=self.url,
            processes=s.load.processes, time_scale=s.traffic.time_scale, rate_scale=self.plan.rate_scale,
            start_clock_s=s.traffic.start_clock_s, env=machine_facts(), fault_lease_s=_fault_lease_s(),
        )
        if s.traffic.calibration is not None:  # the calibration step ran before planning: say what it found
            self.events.emit("calibration", t_s=0.0, source="harness", **s.traffic.calibration.model_dump())
        if self.overhead is not None:
            self.events.emit("harness_overhead", t_s=0.0, source="harness", **self.overhead)

    def _scraper_error(self, error: dict[str, object]) -> None:
        self.events_log.emit("scraper_error", source="harness", **error)

    def _target_metrics_error(self, error: dict[str, object]) -> None:
        self.events_log.emit("target_metrics_error", source="harness", **error)

    def _observe(self) -> None:
        if self.ledger is not None:
            self.ledger.observe()

    def _server_event(self, event: TargetEvent) -> None:
        self.events_log.emit(TARGET_EVENT, **target_event_record(event, t0=self.t0, now=time.time()))

    def _watch(self) -> None:
        """The drill's heartbeat: progress, phase marks, stop conditions, until the load is done."""
        assert self.session is not None
        printer = self.live.printer(ProgressPrinter(self.stream)) if self.live else ProgressPrinter(self.stream)
        try:
            while not self.session.finished() and not self.interrupted and self.abort_reason is None:
                time.sleep(TICK_S)
                self._tick(printer)
        finally:
            printer.close()

    def _tick(self, printer: Printer) -> None:
        assert self.session is not None
        elapsed = time.time() - self.t0
        parts = self.session.poll()
        self.stats.add(parts)
        self.stats.cpu_samples.append(self.session.cpu_percent() / 100.0)
        if self.live is not None:
            self.live.tick(parts, self.stats.cpu_samples[-1])
        self._observe()
        self._mark_phases(elapsed)
        printer.show(progress_line(self.stats, elapsed_s=elapsed, total_s=self.plan.duration_s,
                                   scheduled=self.plan.facts.count), elapsed)
        reason = stop_reason(self.stats, self.plan.scenario.stop_conditions, elapsed)
        if reason is not None:
            self.abort_reason = f"stop condition met: {reason}"

    def _mark_phases(self, elapsed: float) -> None:
        while self._phases_seen < len(self.plan.phases) and self.plan.phases[self._phases_seen].start_s <= elapsed:
            phase = self.plan.phases[self._phases_seen]
            self.events_log.emit("phase", t_s=phase.start_s, name=phase.name, start_s=phase.start_s, end_s=phase.end_s)
            self._phases_seen += 1

    def _stop_steps(self) -> tuple[Callable[[], object], ...]:
        """Stop everything in a safe order (the results are written after the last)."""
        return (self._stop_load, self._stop_chaos, self._audit_target, self._stop_scraper,
                self._stop_server, self._audit_leftovers)

    def _stop_load(self) -> None:
        if self.session is not None:
            self.session.stop()
            failures = self.session.failures()
            if failures and self.abort_reason is None:
                self.abort_reason = "load worker failed: " + "; ".join(failures)
            rejections = self.session.rejections()
            if rejections:
                self.events_log.emit("cluster_rejections", source="harness", **rejections)
            parts = self.session.poll()
            self.stats.add(parts)
            if self.live is not None:
                self.live.tick(parts)

    def _stop_chaos(self) -> None:
        if self.chaos is not None:
            self.chaos.stop()

    def _audit_target(self) -> None:
        began, chaos = time.monotonic(), self.chaos
        try:
            audit_target(self.audit, self.plan, url=self.url if chaos is not None else None,
                         heal=chaos.heal if chaos is not None else None)
        finally:
            self._audit_s += time.monotonic() - began

    def _stop_scraper(self) -> None:
        for scraper in (self.scraper, self.target_scraper):
            if scraper is not None:
                scraper.stop()

    def _stop_server(self) -> None:
        if self.server is not None:
            self.server.stop()

    def _audit_leftovers(self) -> None:
        began = time.monotonic()
        audit_leftovers(self.audit, self.ledger)
        self._audit_s += time.monotonic() - began
        result = self.audit.result(time.time() - self.t0 if self.t0 else None)
        write_json_atomic(result, self.results_dir / AUDIT_FILE)
        self.events_log.emit("leak_audit", **{k: v for k, v in result.items() if k != "t_s"})
        findings = "; ".join(f"{f['target']}: {f['detail']}" for f in result["findings"])
        self._say("leak audit: clean" if result["clean"] else f"warning: leak audit found {findings}")

    def _write_results(self) -> None:
        out = self.results_dir / REQUESTS_FILE
        if self.session is not None:  # merged a chunk of the schedule at a time (rushhour.scenarios.load.merge)
            self.session.write_requests(out)
        else:
            merge_to_file(self.results_dir / SCHEDULE_FILE, [], out)
        metrics = self.scraper.frame() if self.scraper else metrics_frame([])
        write_parquet_atomic(metrics, self.results_dir / SERVER_METRICS_FILE)
        log = self.events_log
        if self.scraper is not None:
            log.emit("scraper", source="harness", **self.scraper.summary())
        if self.target_scraper is not None:
            self.target_scraper.write_into(self.results_dir)
            log.emit("target_metrics", source="harness", **self.target_scraper.summary())
        self._mark_phases(min(time.time() - self.t0, self.plan.duration_s) if self.t0 else -1.0)
        log.emit("generator", **self._generator(pd.read_parquet(out, columns=GENERATOR_COLUMNS)))
        if self.abort_reason or (self.interrupted and self.session is None):
            log.emit("abort", reason=self.abort_reason or "interrupted before the load started")
        elif self.interrupted:
            log.emit("abort", reason="interrupted by the operator (Ctrl-C)")
        duration = time.time() - self.t0 - self._audit_s if self.t0 else 0.0
        log.emit("run_end", duration_s=round(duration, 3), interrupted=self.interrupted)
        log.close()

    def _generator(self, requests: pd.DataFrame) -> dict[str, object]:
        """The generator's figures from the columns they need (not the whole requests table)."""
        cpu = np.asarray(self.stats.cpu_samples[1:] or [0.0])
        return {"cpu_max": round(float(cpu.max()), 4), **generator_figures(requests),
                "processes": self.plan.scenario.load.processes}

    def _report(self) -> RunResult:
        from rushhour.reports import build_reports
        from rushhour.reports.build import exit_code

        try:
            summary = build_reports(self.results_dir)
        except Exception as exc:  # noqa: BLE001 - the results stay; say why the report did not
            self._say(f"error: the report could not be built: {exc}")
            return RunResult(EXIT_INVALID, "invalid", str(exc), self.results_dir)
        verdict = str(summary.get("verdict", "invalid"))
        code = exit_code(summary)
        if self.abort_reason or self.interrupted:
            code = EXIT_INVALID
        return RunResult(code, verdict, str(summary.get("headline") or summary.get("verdict_reason", "")), self.results_dir)


def _fault_lease_s() -> float | str:
    """The lease a held fault gets (renewed while held): what a killed drill can leave behind."""
    from chaoslib.exceptions import ActivityFailed

    from rushhour.experiments.leases import default_lease_s

    try:
        return default_lease_s()
    except ActivityFailed as exc:
        return str(exc)
