"""What a running drill looks like right now: the one object the drill feeds and the live
exporters (`rushhour.scenarios.run.live.metrics`, `rushhour.scenarios.run.live.view`) read.

The drill calls `begin` once the load has started and `tick` with the parts it polled; the
fault marks are read from `events.jsonl` (the chaos timeline's `fault_start`/`fault_end`), at
each tick and at each scrape, so the fault gauge is as fresh as the scrape that reads it, even
while the drill is tearing down. A lock keeps a scrape from reading half a tick.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rushhour.kernel.contract import EVENTS_FILE, SCHEDULE_FILE
from rushhour.kernel.eventlines import RefusedLine, check_lines
from rushhour.kernel.events import Event, FaultEnd, FaultStart
from rushhour.scenarios.run.live.fold import LiveFold
from rushhour.scenarios.run.live.refusals import Refusals
from rushhour.scenarios.run.live.slo import SloBoard
from rushhour.scenarios.spec.plan import DrillPlan


@dataclass
class EventTail:
    """Reads the complete lines appended to events.jsonl since the last read, each through the
    event models (`rushhour.kernel.eventlines`); a refused line is kept in `refused` with its number."""

    path: Path
    _offset: int = 0
    _lines: int = 0
    refused: list[RefusedLine] = field(default_factory=list)

    def read(self) -> list[Event]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except OSError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        lines = complete.decode("utf-8", errors="replace").split("\n")[:-1]
        checked = check_lines(lines, first_line=self._lines + 1)
        self._lines += len(lines)
        self.refused.extend(checked.refused)
        return [each.event for each in checked.events]


@dataclass
class LiveState:
    """Counters, SLO tallies, faults, phase and generator health of one drill."""

    plan: DrillPlan
    results_dir: Path
    run_name: str = ""
    t0: float = 0.0
    target_url: str | None = None  # the drilled service, for Prometheus service discovery
    cpu_ratio: float = 0.0
    faults: dict[str, float | None] = field(default_factory=dict)  # name -> start t_s while held
    lock: threading.RLock = field(default_factory=threading.RLock)
    refusals: Refusals = field(default_factory=Refusals)  # what the target and the cluster sent that was refused

    def __post_init__(self) -> None:
        scenario = self.plan.scenario
        facts = self.plan.facts  # the schedule is read from the run's file, a row group at a time
        self.fold = LiveFold(self.results_dir / SCHEDULE_FILE, documents_via_jobs=scenario.load.documents_via_jobs,
                             labels=facts.labels, count=facts.count)
        self.slos = SloBoard.for_specs(list(scenario.slos), scenario.traffic.time_scale)
        self.faults = {fault.name: None for fault in self.plan.chaos if fault.in_run}
        self.run_name = self.run_name or self.results_dir.name
        self._tail = EventTail(self.results_dir / EVENTS_FILE)

    @property
    def started(self) -> bool:
        return self.t0 > 0

    def begin(self, t0: float, target_url: str | None = None, control_dir: Path | None = None) -> None:
        """The load started at wall time `t0`; across hosts `control_dir` holds the master's rejections."""
        with self.lock:
            self.t0, self.target_url = t0, target_url
            self.refusals.control_dir = control_dir

    def elapsed(self) -> float:
        return time.time() - self.t0 if self.started else 0.0

    def tick(self, parts: pd.DataFrame, cpu_ratio: float | None = None) -> None:
        """Fold in the parts polled since the last tick and the offered load up to now."""
        with self.lock:
            if cpu_ratio is not None:
                self.cpu_ratio = cpu_ratio
            if self.started:
                self.fold.advance(self.elapsed())
            if not parts.empty:
                self.slos.add(self.fold.add(parts))
            self.read_events()

    def read_events(self) -> None:
        with self.lock:
            self.refusals.read_cluster()
            for event in self._tail.read():
                self.refusals.see(event)
                if isinstance(event, FaultStart) and event.name in self.faults:
                    self.faults[event.name] = event.t_s
                elif isinstance(event, FaultEnd) and event.name in self.faults:
                    self.faults[event.name] = None

    @property
    def refused_events(self) -> list[RefusedLine]:
        """The lines of events.jsonl read so far that the event models refused."""
        return self._tail.refused

    def phase(self) -> str:
        """The plan's phase at this moment ("" before the load and after the schedule)."""
        now = self.elapsed()
        if not self.started or now >= self.plan.duration_s:
            return ""
        return next((p.name for p in self.plan.phases if p.start_s <= now < p.end_s), "")

    def phase_names(self) -> list[str]:
        return list(dict.fromkeys(p.name for p in self.plan.phases))
