"""What a running drill looks like right now: the one object the drill feeds and the live
exporters (`rushhour.scenarios.run.live.metrics`, `rushhour.scenarios.run.live.view`) read.

The drill calls `begin` once the load has started and `tick` with the parts it polled; the
fault marks are read from `events.jsonl` (the chaos timeline's `fault_start`/`fault_end`), at
each tick and at each scrape, so the fault gauge is as fresh as the scrape that reads it, even
while the drill is tearing down. A lock keeps a scrape from reading half a tick.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rushhour.kernel.contract import EVENTS_FILE, SCHEDULE_FILE
from rushhour.scenarios.run.live.fold import LiveFold
from rushhour.scenarios.run.live.slo import SloBoard
from rushhour.scenarios.spec.plan import DrillPlan


@dataclass
class EventTail:
    """Reads the complete lines appended to a JSON-lines file since the last read."""

    path: Path
    _offset: int = 0

    def read(self) -> list[dict[str, object]]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        events = []
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return events


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

    def begin(self, t0: float, target_url: str | None = None) -> None:
        with self.lock:
            self.t0, self.target_url = t0, target_url

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
            for event in self._tail.read():
                name = str(event.get("name", ""))
                if name not in self.faults:
                    continue
                if event.get("type") == "fault_start":
                    self.faults[name] = float(event.get("t_s", 0.0))  # type: ignore[arg-type]
                elif event.get("type") == "fault_end":
                    self.faults[name] = None

    def phase(self) -> str:
        """The plan's phase at this moment ("" before the load and after the schedule)."""
        now = self.elapsed()
        if not self.started or now >= self.plan.duration_s:
            return ""
        return next((p.name for p in self.plan.phases if p.start_s <= now < p.end_s), "")

    def phase_names(self) -> list[str]:
        return list(dict.fromkeys(p.name for p in self.plan.phases))
