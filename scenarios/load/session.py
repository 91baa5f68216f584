"""One load run end to end, from the runner's side: start Locust, sync the start, watch, stop.

The runner's loop calls `poll()` once a second to get the parts written since the last call
(for progress and stop conditions) and `cpu_percent()` for the generator's own health; the
session hides the control files and the Locust process behind that.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rushhour.scenarios.generator.clusterauth import SECRET_ENV
from rushhour.scenarios.generator.master_relay import REJECTIONS_FILE
from rushhour.scenarios.generator.openloop import monotonic_anchor
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import count_markers
from rushhour.scenarios.generator.worker_relay import ENV_DISTRIBUTED
from rushhour.scenarios.load.locust import (
    CLOSED_LOCUSTFILE,
    OPEN_LOCUSTFILE,
    READY_WAIT_S,
    LocustCommand,
    LocustProcess,
    start_load,
    wait_ready,
    worker_env,
)
from rushhour.scenarios.load.merge import DEFAULT_CHUNK_ROWS as MERGE_CHUNK_ROWS
from rushhour.scenarios.load.merge import merge_to_file
from rushhour.scenarios.load.parts import list_parts, merge_requests, read_parts

DRAIN_SLACK_S = 5.0
WORKERS_JOIN_S = 600.0
"""How long a master waits for its remote workers to join and load their shares."""
CLOSED_STOP_TIMEOUT_S = 5.0
"""A persona mid-request may finish it when the load stops; open-loop requests end at the stop."""


@dataclass
class LoadSession:
    """Drives one Locust subprocess through a run of `settings`."""

    settings: LoadSettings
    cluster_secret: str | None = field(default=None, repr=False)
    """Across hosts: the secret every remote worker must prove (None: the empty key, loopback only);
    given to the Locust master in its own variable, never with the settings."""
    t0: float = 0.0
    _proc: LocustProcess | None = None
    _seen: set[Path] = field(default_factory=set)
    _started: float = 0.0

    @property
    def control_dir(self) -> Path:
        return self.settings.control_dir

    @property
    def parts_dir(self) -> Path:
        return self.settings.parts_dir

    def start(self) -> float:
        """Start Locust, wait for every worker to be ready, publish the common start time."""
        self.control_dir.mkdir(parents=True, exist_ok=True)
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        env = worker_env(self.settings)
        env.pop(SECRET_ENV, None)
        if self.settings.remote_workers:
            env[ENV_DISTRIBUTED] = "1"
            if self.cluster_secret:
                env[SECRET_ENV] = self.cluster_secret
        self._proc = LocustProcess(self._command(), env=env, log_path=self.settings.work_dir / "locust.log")
        self._proc.start()
        limit = WORKERS_JOIN_S if self.settings.remote_workers else READY_WAIT_S
        wait_ready(self._proc, self.control_dir, self.settings.workers, limit_s=limit)
        self.t0 = start_load(self.control_dir)
        self._started = monotonic_anchor(self.t0)
        return self.t0

    def _command(self) -> LocustCommand:
        closed = self.settings.mode == "closed"
        run_time = self.settings.duration_s + self.settings.max_timeout_s + 60.0
        return LocustCommand(host=self.settings.host, processes=self.settings.processes, run_time_s=run_time,
                             locustfile=CLOSED_LOCUSTFILE if closed else OPEN_LOCUSTFILE,
                             stop_timeout_s=CLOSED_STOP_TIMEOUT_S if closed else 0.0,
                             expect_workers=self.settings.remote_workers, master_bind=self.settings.master_bind)

    @property
    def deadline(self) -> float:
        """Monotonic time after which the session stops waiting for stragglers."""
        return self._started + self.settings.duration_s + self.settings.max_timeout_s + DRAIN_SLACK_S

    def finished(self) -> bool:
        """All workers done, Locust gone, or past the deadline."""
        done = count_markers(self.control_dir, "done") >= self.settings.workers
        gone = self._proc is None or not self._proc.alive()
        return done or gone or time.monotonic() > self.deadline

    def poll(self) -> pd.DataFrame:
        """Part rows written since the previous poll."""
        fresh = [p for p in list_parts(self.parts_dir) if p not in self._seen]
        self._seen.update(fresh)
        return read_parts(fresh)

    def cpu_percent(self) -> float:
        """The busiest generator process: the local Locust ones, and each remote worker's last report."""
        local = self._proc.cpu_percent() if self._proc else 0.0
        remote = [float(p.read_text(encoding="utf-8") or 0.0) for p in self.control_dir.glob("cpu-*")]
        return max([local, *remote])

    def cpu_seconds(self) -> float:
        """CPU time the local Locust processes have used so far (benchmarks: CPU per request)."""
        return self._proc.cpu_seconds() if self._proc else 0.0

    def stop(self) -> None:
        """Stop Locust (its workers flush what they have on the way out)."""
        if self._proc is not None:
            self._proc.stop()

    def failures(self) -> list[str]:
        """Why workers failed or were lost mid-run (their unsent rows stay not sent)."""
        return [p.read_text(encoding="utf-8") or p.name for p in sorted(self.control_dir.glob("failed-*"))]

    def rejections(self) -> dict[str, object]:
        """Across hosts: messages dropped (by type) and nodes refused; empty when there were none."""
        path = self.control_dir / REJECTIONS_FILE
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def remote_workers(self) -> list[dict[str, object]]:
        """Each remote worker's host, share and measured clock offset (empty on one machine)."""
        return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(self.control_dir.glob("clock-*.json"))]

    def requests(self, schedule: pd.DataFrame) -> pd.DataFrame:
        """Every part merged onto the schedule: one row per scheduled request."""
        return merge_requests(schedule, read_parts(list_parts(self.parts_dir)),
                              documents_via_jobs=self.settings.jobs_in_use)

    def write_requests(self, out: Path, *, chunk_rows: int = MERGE_CHUNK_ROWS,
                       keep: Mapping[str, str] | None = None) -> int:
        """Every part merged onto the schedule file a chunk at a time, written to `out` (the same
        rows as `requests`, without holding the schedule or the parts whole), with the schedule's
        `keep` columns carried over; rows written."""
        return merge_to_file(self.settings.schedule_path, list_parts(self.parts_dir), out,
                             documents_via_jobs=self.settings.jobs_in_use, chunk_rows=chunk_rows, keep=keep)
