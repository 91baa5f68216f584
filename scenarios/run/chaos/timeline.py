"""The chaos timeline of a drill: which experiment runs at which scenario time.

A scenario says "at 20:10 on the model clock, lose a GPU node". The drill replays the model day
faster than real time (`time_scale` model seconds per wall second) starting at `start_clock_s`,
so that entry fires `(20:10 - start_clock_s) / time_scale` wall seconds after the run starts.
Each firing is one `chaos run` subprocess (see `rushhour.scenarios.run.chaos.process`), journalled in `out_dir`;
the drill hears of it through `on_event` (`fault_start` / `fault_end`), which is called from a
background thread, never from two at once.

`stop()` interrupts what is still running so that its rollbacks play, waits a bounded time, and
when anything might be left broken (a run killed, a rollback failed or missing) heals the whole
target with `POST /admin/reset`.

The scheduler thread starts every run and stays alive until `stop()` has seen them all end:
a run's parent-death signal (see `rushhour.scenarios.run.chaos.process`) fires when the thread that forked it
ends, so that thread must live exactly as long as the drill needs its runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from rushhour.kernel.clock import format_clock
from rushhour.scenarios.protocols.admission import admitted_client
from rushhour.scenarios.run.chaos.process import ChaosProcess, chaos_command
from rushhour.scenarios.spec.chaos import PlannedFault

__all__ = ["ChaosTimeline"]

logger = logging.getLogger(__name__)

DEFAULT_STOP_TIMEOUT_S = 60.0


class ChaosTimeline:
    """Fires each entry's experiment at its time and guarantees the faults are undone at stop."""

    def __init__(
        self,
        faults: Sequence[PlannedFault],
        *,
        time_scale: float,
        start_clock_s: float,
        out_dir: Path,
        url: str,
        token: str,
        on_event: Callable[[dict[str, Any]], None],
        clock: Callable[[], float] = time.monotonic,
        stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if time_scale <= 0:
            raise ValueError(f"time_scale must be positive, not {time_scale!r}.")
        self.time_scale = float(time_scale)
        self.start_clock_s = float(start_clock_s)
        self.out_dir = Path(out_dir)
        self.url = url.rstrip("/")
        self._token = token
        self._on_event = on_event
        self._clock = clock
        self.stop_timeout_s = stop_timeout_s
        self._env = {**(env or {}), "RUSHHOUR_URL": self.url, "RUSHHOUR_ADMIN_TOKEN": token}
        self.faults = [fault for fault in faults if fault.in_run]
        self._procs: list[ChaosProcess] = []
        self._watchers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._event_lock = threading.Lock()
        self._stopping = threading.Event()
        self._released = threading.Event()
        self._scheduler: threading.Thread | None = None
        self._t0 = 0.0
        self.reset_sent = False

    def __repr__(self) -> str:
        return f"ChaosTimeline(url={self.url!r}, faults={[f.name for f in self.faults]!r})"

    def plan(self) -> list[dict[str, Any]]:
        """What would run and when, for `--dry-run`; touches neither the target nor the disk."""
        return [
            {
                **fault.model_dump(mode="json"),
                "command": chaos_command(fault.experiment, self._journal(fault), hypothesis=fault.hypothesis),
            }
            for fault in self.faults
        ]

    def start(self, t0: float) -> None:
        """Begin the schedule; `t0` is the run's start on the `clock` given at construction."""
        if self._scheduler is not None:
            raise RuntimeError("This chaos timeline has already been started.")
        self._t0 = t0
        self._scheduler = threading.Thread(
            target=self._schedule, name="chaos-timeline", daemon=True
        )
        self._scheduler.start()

    def stop(self) -> None:
        """Interrupt running experiments (their rollbacks play), wait, then reset if in doubt."""
        self._stopping.set()
        with self._lock:  # a launch in progress finishes first; none starts after this
            procs = list(self._procs)
        for proc in procs:
            proc.interrupt()
        deadline = time.monotonic() + self.stop_timeout_s
        for proc in procs:
            if proc.wait(max(0.0, deadline - time.monotonic())) is None:
                logger.warning("Chaos experiment %s did not stop in time; killing it.", proc.name)
                proc.kill()
        self._released.set()
        if self._scheduler is not None:
            self._scheduler.join()
        for watcher in self._watchers:
            watcher.join()
        if any(not proc.rolled_back() for proc in procs):
            self._reset()

    def heal(self) -> bool:
        """Heal the whole target now (`POST /admin/reset`); True when the server accepted it."""
        self._reset()
        return self.reset_sent

    @property
    def outcomes(self) -> list[dict[str, Any]]:
        """Per launched experiment: its status, whether it was interrupted and rolled back."""
        return [
            {
                "name": p.name,
                "status": p.status(),
                "interrupted": p.interrupted,
                "rolled_back": p.rolled_back(),
                "journal": str(p.journal_path),
            }
            for p in self._procs
        ]

    def scenario_time(self, offset_s: float) -> str:
        return format_clock(self.start_clock_s + offset_s * self.time_scale)

    def _journal(self, fault: PlannedFault) -> Path:
        return self.out_dir / f"{fault.name}.journal.json"

    def _schedule(self) -> None:
        try:
            self._launch_all()
        finally:
            self._released.wait()  # the runs' parent-death signal is tied to this thread

    def _launch_all(self) -> None:
        for fault in sorted(self.faults, key=lambda f: f.offset_s):
            delay = self._t0 + fault.offset_s - self._clock()
            if self._stopping.wait(max(0.0, delay)):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                proc = ChaosProcess(
                    name=fault.name,
                    experiment=fault.experiment,
                    out_dir=self.out_dir,
                    env=fault.process_env(self._env),
                    hypothesis=fault.hypothesis,
                )
                try:
                    proc.launch()
                except OSError as exc:
                    logger.error("Could not launch chaos experiment %s: %s", fault.name, exc)
                    continue
                self._procs.append(proc)
            self._emit("fault_start", fault, {"pid": proc.pid})
            watcher = threading.Thread(target=self._watch, args=(proc, fault), daemon=True)
            self._watchers.append(watcher)
            watcher.start()

    def _watch(self, proc: ChaosProcess, fault: PlannedFault) -> None:
        code = proc.wait()
        extra = {"returncode": code, "status": proc.status(), "interrupted": proc.interrupted}
        self._emit("fault_end", fault, extra)

    def _emit(self, kind: str, fault: PlannedFault, extra: dict[str, Any]) -> None:
        now = self.scenario_time(self._clock() - self._t0)
        event = {"type": kind, "name": fault.name, "experiment": str(fault.experiment)}
        event.update(scenario_time=now, **extra)
        with self._event_lock:
            try:
                self._on_event(event)
            except Exception:  # a failing listener must not leave a fault unwatched
                logger.exception("The chaos event listener failed on %s.", kind)

    def _reset(self) -> None:
        try:
            with admitted_client(timeout=10.0) as http:
                response = http.post(f"{self.url}/admin/reset", headers={"Authorization": f"Bearer {self._token}"})
            self.reset_sent = response.status_code < 400
            if not self.reset_sent:
                logger.error("POST %s/admin/reset answered %s.", self.url, response.status_code)
        except httpx.HTTPError as exc:
            logger.error("Could not reset %s after the chaos timeline: %s", self.url, exc)
