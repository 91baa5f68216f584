"""Closed-loop personas (`load.mode: closed`) for those who want Locust's user model.

Users send, wait for the reply, pace, and send again; their number follows the traffic model's
rate curve (a LoadTestShape). Each send takes the next row of the same schedule and never goes
before that row's intended time, so `requests.parquet` keeps one row per scheduled request and
its corrected latency shows what the closed loop hides: rows sent late, or never, because every
user was stuck waiting on a slow reply.
"""

from __future__ import annotations

import math
import time

import gevent
import numpy as np
import pandas as pd
from gevent.lock import Semaphore

from scenarios.load.openloop import OpenLoopFirer, Sender, monotonic_anchor
from scenarios.load.parts import PartWriter
from scenarios.load.settings import LoadSettings
from scenarios.load.worker import load_share, wait_for_start, warm_up

PACING_S = 1.0
BIN_S = 5.0


def users_curve(offsets: np.ndarray, duration_s: float, *, pacing_s: float = PACING_S,
                bin_s: float = BIN_S, minimum: int = 1) -> np.ndarray:
    """Users needed in each second of the run: arrival rate (per `bin_s` bin) times the pacing."""
    seconds = max(1, math.ceil(duration_s))
    bins = np.bincount((offsets // bin_s).astype(np.int64), minlength=math.ceil(seconds / bin_s) + 1)
    per_second = bins[(np.arange(seconds) // bin_s).astype(np.int64)] / bin_s
    return np.maximum(np.ceil(per_second * pacing_s), minimum).astype(np.int64)


class ClosedDrill:
    """One process's share of a closed-loop drill, shared by all its persona users."""

    def __init__(self, settings: LoadSettings, index: int) -> None:
        self._settings = settings
        self._index = index
        self._lock = Semaphore()
        self._firer: OpenLoopFirer | None = None
        self._offsets = np.empty(0)
        self._next = 0
        self.m0 = 0.0

    def _ensure_started(self) -> OpenLoopFirer:
        with self._lock:  # the first user loads and waits for the start; the others wait on it
            if self._firer is None:
                control = self._settings.control_dir
                share = load_share(self._settings, self._index)
                warm_up(share)
                writer = PartWriter(self._settings.parts_dir, self._index)
                (control / f"ready-{self._index}").write_text(str(len(share.rows)), encoding="utf-8")
                self.m0 = monotonic_anchor(wait_for_start(control))
                self._offsets = share.rows["offset_s"].to_numpy(dtype=float)
                self._firer = OpenLoopFirer(share, lambda _p, _t: None, writer)  # type: ignore[arg-type, return-value]
            return self._firer

    def step(self, send: Sender) -> bool:
        """Send the next row (not before its time) and record it; False once the share is done."""
        firer = self._ensure_started()
        i = self._next
        if i >= len(self._offsets):
            self._finish(firer)
            return False
        self._next += 1
        delay = self.m0 + self._offsets[i] - time.monotonic()
        if delay > 0:
            gevent.sleep(delay)
        firer.shoot(i, self.m0, float(self._offsets[i]), send)
        return True

    def flush(self) -> None:
        """Write out what is recorded (Locust is stopping)."""
        if self._firer is not None:
            self._firer.flush()

    def _finish(self, firer: OpenLoopFirer) -> None:
        marker = self._settings.control_dir / f"done-{self._index}"
        if not marker.exists():
            firer.flush()
            marker.write_text(str(time.time()), encoding="utf-8")


def shape_users(settings: LoadSettings) -> np.ndarray:
    """The users curve of the whole schedule (the shape runs once, on the master)."""
    schedule = pd.read_parquet(settings.schedule_path, columns=["offset_s"])
    return users_curve(schedule["offset_s"].to_numpy(dtype=float), settings.duration_s, minimum=settings.workers)
