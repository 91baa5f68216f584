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
from collections.abc import Iterator
from pathlib import Path

import gevent
import numpy as np
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from gevent.lock import Semaphore

from rushhour.kernel.atomic import write_text_atomic
from rushhour.scenarios.generator.openloop import OpenLoopFirer, Sender, Share, monotonic_anchor
from rushhour.scenarios.generator.partwriter import PartWriter
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import share_batches, wait_for_start, warm_up
from rushhour.scenarios.generator.sharestream import SHARE_BATCH_ROWS, Prefetched, share_size
from rushhour.scenarios.protocols.outcome import Outcome

PACING_S = 1.0
BIN_S = 5.0


def users_curve(offsets: np.ndarray, duration_s: float, *, pacing_s: float = PACING_S,
                bin_s: float = BIN_S, minimum: int = 1) -> np.ndarray:
    """Users needed in each second of the run: arrival rate (per `bin_s` bin) times the pacing."""
    return users_of_bins(np.bincount((offsets // bin_s).astype(np.int64)), duration_s, pacing_s=pacing_s,
                         bin_s=bin_s, minimum=minimum)


def users_of_bins(bins: np.ndarray, duration_s: float, *, pacing_s: float = PACING_S, bin_s: float = BIN_S,
                  minimum: int = 1) -> np.ndarray:
    """`users_curve` from the arrivals counted per bin (bin k: offsets in [k * bin_s, (k + 1) * bin_s))."""
    seconds = max(1, math.ceil(duration_s))
    bins = np.pad(bins, (0, max(0, math.ceil(seconds / bin_s) + 1 - bins.size)))
    per_second = bins[(np.arange(seconds) // bin_s).astype(np.int64)] / bin_s
    return np.maximum(np.ceil(per_second * pacing_s), minimum).astype(np.int64)


class ClosedDrill:
    """One process's share of a closed-loop drill, shared by all its persona users.

    The share is read a batch of rows at a time, as the open loop reads it
    (`rushhour.scenarios.generator.sharestream`): the users take the rows of one batch in order, and the next
    batch, read on a pool thread meanwhile, takes over when it is used up. The rows sent, their
    order and their intended times are those of the whole share (tests/scenarios/generator/test_closed.py).
    """

    def __init__(self, settings: LoadSettings, index: int, *, batch_rows: int = SHARE_BATCH_ROWS) -> None:
        self._settings = settings
        self._index = index
        self._batch_rows = batch_rows
        self._lock = Semaphore()
        self._writer: PartWriter | None = None
        self._firer: OpenLoopFirer | None = None
        self._later: Iterator[Share] = iter(())
        self._offsets: list[float] = []
        self._next = 0
        self.m0 = 0.0

    def _ensure_started(self) -> OpenLoopFirer:
        """The first user loads the first batch and waits for the start; the others wait on it."""
        if self._firer is None:
            control = self._settings.control_dir
            batches = share_batches(self._settings, self._index, batch_rows=self._batch_rows)
            share = next(batches)
            warm_up(share)
            self._writer = PartWriter(self._settings.parts_dir, self._index)
            self._later = Prefetched(batches)  # each later batch read while the one before is sent
            size = share_size(self._settings.schedule_path, self._index, self._settings.workers)
            write_text_atomic(str(size), control / f"ready-{self._index}", sync=False)
            self.m0 = monotonic_anchor(wait_for_start(control))
            self._take(share)
        assert self._firer is not None
        return self._firer

    def _take(self, share: Share) -> None:
        assert self._writer is not None
        self._firer = OpenLoopFirer(share, _no_sender, self._writer)
        self._offsets = share.offsets.tolist()
        self._next = 0

    def _claim_row(self) -> tuple[OpenLoopFirer, int, float] | None:
        """The next row to send (its batch's firer, its index there, its offset), moving on to the
        next batch when this one is used up; None once the share is done."""
        with self._lock:
            firer = self._ensure_started()
            while self._next >= len(self._offsets):
                share = next(self._later, None)
                if share is None:
                    self._finish(firer)
                    return None
                self._take(share)
                firer = self._ensure_started()
            i = self._next
            self._next += 1
            return firer, i, self._offsets[i]

    def step(self, send: Sender) -> bool:
        """Send the next row (not before its time) and record it; False once the share is done."""
        claimed = self._claim_row()
        if claimed is None:
            return False
        firer, i, offset = claimed
        delay = self.m0 + offset - time.monotonic()
        if delay > 0:
            gevent.sleep(delay)
        firer.shoot(i, self.m0, offset, send)
        return True

    def flush(self) -> None:
        """Write out what is recorded (Locust is stopping)."""
        if self._firer is not None:
            self._firer.flush()

    def _finish(self, firer: OpenLoopFirer) -> None:
        marker = self._settings.control_dir / f"done-{self._index}"
        if not marker.exists():
            firer.flush()
            write_text_atomic(str(time.time()), marker, sync=False)


def _no_sender(_payload: dict[str, object], _timeout_s: float) -> Outcome:
    """The firer's own sender, never called: each persona sends through its own client."""
    raise RuntimeError("a closed-loop row is sent through its persona's sender")


def shape_users(settings: LoadSettings, *, batch_rows: int = SHARE_BATCH_ROWS) -> np.ndarray:
    """The users curve of the whole schedule (the shape runs once, on the master), its arrivals
    counted per bin a batch of offsets at a time."""
    return users_of_bins(arrival_bins(settings.schedule_path, BIN_S, batch_rows=batch_rows), settings.duration_s,
                         minimum=settings.workers)


def arrival_bins(path: Path, bin_s: float, *, batch_rows: int = SHARE_BATCH_ROWS) -> np.ndarray:
    """Arrivals of the schedule at `path` per `bin_s` bin, its `offset_s` column read a batch at a time."""
    bins = np.zeros(0, dtype=np.int64)
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows, columns=["offset_s"]):
        offsets = batch.column(0).to_numpy(zero_copy_only=False).astype(float)
        counts = np.bincount((offsets // bin_s).astype(np.int64))
        bins = np.pad(bins, (0, max(0, counts.size - bins.size)))
        bins[: counts.size] += counts
    return bins
