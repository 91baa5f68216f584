"""One A/B run, start to finish: boot the embedded arms, probe both, fire the whole schedule
open-loop with every row sent to its trial's arm, and always write the results and the verdict.

It is a drill with two targets: the same Locust open loop (`rushhour.scenarios.load`), latency from the
intended send, the generator's own health judged like a drill's; what it adds is each row's
target (`base_url`) and its `arm` and `trial` in requests.parquet. One Locust run carries both
arms, so the interleaving costs no start-up between trials and the clock is one clock.

Like a drill, it never holds the whole schedule: the rows are drawn, given their arms and written
to schedule.parquet a chunk at a time (`assigned_chunks`), the workers read their shares in
batches, and requests.parquet is merged a chunk at a time with each row's arm and trial carried
over; the files equal those of the whole-schedule path (tests/scenarios/ab/test_runner.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from rushhour.kernel.contract import AB_COLUMNS, EVENTS_FILE, REQUESTS_FILE, SCHEDULE_FILE
from rushhour.scenarios.ab.targets import ArmServers, ArmTarget, probe_arm
from rushhour.scenarios.ab.trials import TrialDesign, assigned_chunks
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.health import generator_figures
from rushhour.scenarios.load.merge import merge_chunks_to_file, merge_to_file
from rushhour.scenarios.load.session import LoadSession
from rushhour.scenarios.run.envinfo import machine_facts
from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.run.lifecycle import GENERATOR_COLUMNS, SCHEDULE_GROUP_ROWS, RunLifecycle, claim_folder
from rushhour.scenarios.run.live.progress import ProgressPrinter, RunningTally, progress_line
from rushhour.scenarios.spec.model import dump_scenario
from rushhour.scenarios.spec.plan import DrillPlan
from rushhour.traffic_models.chunked import write_schedule

TICK_S = 0.5

__all__ = ["AbRun"]


@dataclass
class AbRun(RunLifecycle[dict[str, Any]]):
    """The state of one running A/B comparison (everything the teardown must reach)."""

    plan: DrillPlan
    targets: tuple[ArmTarget, ArmTarget]
    design: TrialDesign
    folder: Path
    threshold: float
    confidence: float
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    error_margin: float | None = None
    """How much higher a failure share may be shown not to be for a pass (None: the report's default)."""
    calibration: dict[str, Any] | None = None
    """The runner's calibration record, quoted by the verdict."""
    probed: dict[str, str] = field(default_factory=dict)
    """Probe lines of the arms already probed (URL arms, by the CLI)."""
    chunk_rows: int = SCHEDULE_GROUP_ROWS
    """Schedule rows drawn, assigned, written and merged at a time (a row group of each file)."""
    abort_reason: str | None = None
    interrupted: bool = False
    _servers: ArmServers | None = None
    _session: LoadSession | None = None
    _events: EventLog | None = None
    _scheduled: bool = False
    _tally: RunningTally = field(default_factory=RunningTally)
    _t0: float = 0.0

    def run(self) -> dict[str, Any]:
        """Run and judge (in `RunLifecycle`'s order); returns the ab.json document. A target that
        fails its probe raises rushhour.scenarios.ab.targets.TargetError once everything is stopped."""
        return super().run()

    def _claim(self) -> None:
        claim_folder(self.folder, dump_scenario(self.plan.scenario, rate_scale=self.plan.rate_scale))

    def _open(self) -> None:
        self._servers = ArmServers(self.targets, self.folder, self.plan.base_dir)

    def _interrupted(self) -> None:
        self.interrupted = True
        self.abort_reason = "interrupted by the operator (Ctrl-C)"

    def _report(self) -> dict[str, Any]:
        from rushhour.reports.ab.build import build_ab

        return build_ab(self.folder)

    def _boot_and_load(self) -> None:
        assert self._servers is not None
        self._servers.start(self.plan.scenario.load.languages, self._say)
        urls = {t.arm: self._servers.url(t) for t in self.targets}
        for target in self.targets:
            if target.arm not in self.probed:  # a URL arm was probed before the folder was claimed
                self._say(probe_arm(target, urls[target.arm], self.plan.scenario.target))
        write_schedule(self.folder / SCHEDULE_FILE, self._assigned(urls))
        self._scheduled = True
        self._session = LoadSession(self._load_settings(urls["baseline"]))
        self._t0 = self._session.start()
        self._open_events(urls)
        self._watch()

    def _load_settings(self, host: str) -> LoadSettings:
        return LoadSettings.from_spec(
            self.plan.scenario.load, self.plan.facts, host=host, schedule_path=self.folder / SCHEDULE_FILE,
            work_dir=self.folder / "load", duration_s=self.plan.duration_s, target=self.plan.scenario.target,
            mode="open",
            documents_via_jobs=False,  # a job's polls go to one host; documents are sent whole to their arm
        )

    def _open_events(self, urls: dict[str, str]) -> None:
        self._events = EventLog(self.folder / EVENTS_FILE, origin=self._t0 or time.time())
        s = self.plan.scenario
        self._events.emit("run_start", t_s=0.0, scenario=s.name, seed=s.traffic.seed, target=urls["baseline"],
                          processes=s.load.processes, time_scale=s.traffic.time_scale,
                          rate_scale=self.plan.rate_scale,
                          start_clock_s=s.traffic.start_clock_s, env=machine_facts())
        margin = {} if self.error_margin is None else {"error_margin": self.error_margin}
        own = {slo.name: slo.ab_threshold for slo in s.slos if slo.ab_threshold is not None}
        self._events.emit("ab", t_s=0.0, threshold=self.threshold, slo_thresholds=own, confidence=self.confidence,
                          design=self.design.as_dict(), calibration=self.calibration, **margin,
                          targets={t.arm: f"{t.given} ({urls[t.arm]})" if t.embedded else t.given
                                   for t in self.targets})

    def _watch(self) -> None:
        assert self._session is not None
        printer = ProgressPrinter(self.stream)
        try:
            while not self._session.finished():
                time.sleep(TICK_S)
                elapsed = time.time() - self._t0
                self._tally.add(self._session.poll())
                self._tally.cpu_samples.append(self._session.cpu_percent() / 100.0)
                printer.show(progress_line(self._tally, elapsed_s=elapsed, total_s=self.plan.duration_s,
                                           scheduled=self.plan.facts.count), elapsed)
        finally:
            printer.close()

    def _stop_steps(self) -> tuple[Callable[[], object], ...]:
        """Stop the load, then the servers (the results are written after them)."""
        return (self._stop_load, self._stop_servers)

    def _stop_load(self) -> None:
        if self._session is not None:
            self._session.stop()
            failures = self._session.failures()
            if failures and self.abort_reason is None:
                self.abort_reason = "load worker failed: " + "; ".join(failures)

    def _stop_servers(self) -> None:
        if self._servers is not None:
            self._servers.stop()

    def _write_results(self) -> None:
        out = self.folder / REQUESTS_FILE
        self._write_requests(out)
        if self._events is None:
            self._open_events({t.arm: t.given for t in self.targets})
        log = self._events
        assert log is not None
        cpu = np.asarray(self._tally.cpu_samples[1:] or [0.0])
        requests = pd.read_parquet(out, columns=GENERATOR_COLUMNS)
        log.emit("generator", cpu_max=round(float(cpu.max()), 4), **generator_figures(requests),
                 processes=self.plan.scenario.load.processes)
        if self.abort_reason:
            log.emit("abort", reason=self.abort_reason)
        log.emit("run_end", duration_s=round(time.time() - self._t0, 3) if self._t0 else 0.0,
                 interrupted=self.interrupted)
        log.close()

    def _assigned(self, urls: dict[str, str]) -> Iterator[pd.DataFrame]:
        """The schedule drawn again a chunk at a time, each row given its trial, arm and target."""
        return assigned_chunks(self.plan.draw.chunks(self.chunk_rows), self.design, urls)

    def _write_requests(self, out: Path) -> None:
        """One row per scheduled request with its arm and trial, merged a chunk at a time: onto the
        written schedule, or (the load never got that far) onto the schedule drawn again, unsent."""
        if self._session is not None:
            self._session.write_requests(out, chunk_rows=self.chunk_rows, keep=AB_COLUMNS)
        elif self._scheduled:
            merge_to_file(self.folder / SCHEDULE_FILE, [], out, chunk_rows=self.chunk_rows, keep=AB_COLUMNS)
        else:
            merge_chunks_to_file(self._assigned({t.arm: "" for t in self.targets}), [], out, keep=AB_COLUMNS)

