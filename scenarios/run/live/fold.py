"""The live numbers of a running drill, folded from the workers' result parts as they arrive.

One fold per drill, in the runner: every worker process writes its parts into the same folder,
so `--processes N` aggregates here with no extra plumbing. Rows are joined onto the schedule
(`merge_requests`, the same columns as `requests.parquet`), counted once per scheduled row, and
grouped by the bounded labels priority, kind, mode and phase. Everything is vectorised: a tick
costs one groupby over the rows that arrived since the last one. Nothing is kept per request
beyond one bit per scheduled row: counters, histograms and a ring of time bins
(`rushhour.scenarios.run.live.hist`) hold the rest, and the schedule itself is read from the run's file a
row group at a time (`rushhour.scenarios.run.live.rows`), so the fold's size does not grow with the run's length.

A request counts when it ended (its answer, error or give-up time): failures count at their end
time, like every latency here, and its latency runs from the intended send time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rushhour.kernel.generator import schedule_lag_s
from rushhour.reports.measures.faults import SHED_STATUSES
from rushhour.scenarios.load.parts import merge_requests
from rushhour.scenarios.run.live.hist import LogHistogram, TimeRing
from rushhour.scenarios.run.live.rows import ScheduleRows
from rushhour.traffic_models.facts import LABEL_COLUMNS

LABELS = LABEL_COLUMNS
_RENARD = (1.0, 1.25, 1.6, 2.0, 2.5, 3.2, 4.0, 5.0, 6.4, 8.0)
LATENCY_BUCKETS_S: tuple[float, ...] = tuple(
    sorted({round(m * 10.0 ** e, 6) for e in range(-3, 2) for m in _RENARD if 0.005 <= m * 10.0 ** e <= 60.0}
           | {60.0}))
"""5 ms to 60 s, ten buckets per decade (neighbours 25% apart), so a P99 interpolated inside a
bucket is off by at most a quarter of its value anywhere in that range."""
LAG_BUCKETS_S: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
COUNTERS = ("sent", "completed", "ok", "failed", "shed", "degraded", "cached", "ok_chars")
RECENT_BIN_S = 1.0
RECENT_SPAN_S = 60.0
"""The terminal view's recent figures reach back a minute, resolved to a second."""


@dataclass(frozen=True)
class HistogramState:
    """Cumulative-free bucket counts per label group (the last column is +Inf) and sums."""

    buckets: tuple[float, ...]
    counts: np.ndarray  # (groups, len(buckets) + 1)
    sums: np.ndarray  # (groups,)

    @classmethod
    def empty(cls, buckets: tuple[float, ...], groups: int) -> HistogramState:
        return cls(buckets, np.zeros((groups, len(buckets) + 1), dtype=np.int64), np.zeros(groups))

    def observe(self, group: np.ndarray, seconds: np.ndarray) -> None:
        """Add observations (NaN values are skipped) for the given group ids, in place."""
        keep = np.isfinite(seconds)
        group, seconds = group[keep], seconds[keep]
        slot = np.searchsorted(np.asarray(self.buckets), seconds, side="left")
        np.add.at(self.counts, (group, slot), 1)
        np.add.at(self.sums, group, seconds)


class LiveFold:
    """Running counters and histograms for one drill's schedule.

    The schedule is a frame, or the run's schedule file with its row count and label groups
    (`rushhour.traffic_models.chunked.ScheduleFacts`), read a row group at a time (`ScheduleRows`). Each
    row costs one bit (seen or not); the offered load is counted by a cursor through the schedule
    in order, and the offsets of the last RECENT_SPAN_S of it are kept for `offered_between`.
    """

    def __init__(self, schedule: pd.DataFrame | Path, *, documents_via_jobs: bool = False,
                 labels: Sequence[tuple[str, ...]] | None = None, count: int | None = None) -> None:
        self.rows = ScheduleRows(schedule)
        if isinstance(schedule, pd.DataFrame):
            keys = schedule[list(LABELS)].astype(str)
            labels = list(keys.drop_duplicates().itertuples(index=False, name=None))
            count = len(schedule)
        if labels is None or count is None:
            raise ValueError("A live fold of a schedule file needs its label groups and row count.")
        self.count = count
        self.groups: list[tuple[str, ...]] = sorted(tuple(str(v) for v in g) for g in labels)
        self._index = pd.MultiIndex.from_tuples(self.groups, names=list(LABELS)) if self.groups else None
        self.priorities = sorted({group[0] for group in self.groups})
        self._group_priority = np.array([self.priorities.index(g[0]) for g in self.groups], dtype=np.int64)
        n = len(self.groups)
        self._jobs = documents_via_jobs
        self._seen = np.zeros((count + 7) // 8, dtype=np.uint8)  # one bit per scheduled row
        self._in_order: Iterator[pd.DataFrame] | None = None
        self._pending: tuple[np.ndarray, np.ndarray] | None = None
        self._recent_offsets: deque[np.ndarray] = deque()
        self.offered = np.zeros(n, dtype=np.int64)
        self.counters = {name: np.zeros(n, dtype=np.int64) for name in COUNTERS}
        self.latency = HistogramState.empty(LATENCY_BUCKETS_S, n)
        self.service = HistogramState.empty(LATENCY_BUCKETS_S, n)
        self.lag = HistogramState.empty(LAG_BUCKETS_S, 1)
        self._lags = LogHistogram(lo=1e-6, hi=1e4)
        self._recent_latency = LogHistogram(lo=1e-4, hi=1e4)
        shape = (len(self.priorities),)
        self._recent = TimeRing(bin_s=RECENT_BIN_S, span_s=RECENT_SPAN_S, shape=(*shape, 3))  # done, failed, shed
        self._recent_hist = TimeRing(bin_s=RECENT_BIN_S, span_s=RECENT_SPAN_S, shape=(*shape, self._recent_latency.size))

    def group_ids(self, frame: pd.DataFrame) -> np.ndarray:
        """Each row's label group (its index in `groups`)."""
        if self._index is None or frame.empty:
            return np.zeros(0, dtype=np.int64)
        keys = pd.MultiIndex.from_frame(frame[list(LABELS)].astype(str))
        return np.asarray(self._index.get_indexer(keys), dtype=np.int64)

    def advance(self, elapsed_s: float) -> None:
        """Count the scheduled rows whose intended send time has come (offered load)."""
        if self._in_order is None:
            self._in_order = self.rows.in_order()
        while True:
            if self._pending is None:
                batch = next(self._in_order, None)
                if batch is None:
                    break
                order = np.argsort(batch["offset_s"].to_numpy(dtype=float), kind="stable")  # a schedule is in order
                batch = batch.iloc[order]
                self._pending = (batch["offset_s"].to_numpy(dtype=float), self.group_ids(batch))
            offsets, groups = self._pending
            stop = int(np.searchsorted(offsets, elapsed_s, side="right"))
            if stop:
                self.offered += np.bincount(groups[:stop], minlength=len(self.groups))
                self._recent_offsets.append(offsets[:stop])
            if stop < offsets.size:
                self._pending = (offsets[stop:], groups[stop:])
                break
            self._pending = None
        while self._recent_offsets and self._recent_offsets[0][-1] < elapsed_s - RECENT_SPAN_S:
            self._recent_offsets.popleft()

    def add(self, parts: pd.DataFrame) -> pd.DataFrame:
        """Fold in new part rows; returns them merged onto the schedule (first firing only)."""
        merged = self.merge_new(parts)
        if merged.empty:
            return merged
        self._count(merged, self.group_ids(merged))
        return merged

    def merge_new(self, parts: pd.DataFrame) -> pd.DataFrame:
        """Rows not seen before, in `requests.parquet` columns, indexed by schedule row."""
        rows = parts["row"].to_numpy(dtype=np.int64)
        inside = (rows >= 0) & (rows < self.count)
        parts, rows = parts[inside], rows[inside]
        seen = (self._seen[rows >> 3] >> (rows & 7).astype(np.uint8)) & 1
        first = ~pd.Series(rows).duplicated().to_numpy() & (seen == 0)
        parts, rows = parts[first], rows[first]
        np.bitwise_or.at(self._seen, rows >> 3, (1 << (rows & 7)).astype(np.uint8))
        merged = merge_requests(self.rows.take(rows), parts.assign(row=np.arange(len(rows))),
                                documents_via_jobs=self._jobs)
        merged.index = pd.Index(rows)
        return merged

    def _count(self, merged: pd.DataFrame, group: np.ndarray) -> None:
        n = len(self.groups)
        status = merged["status"].to_numpy()
        ok = merged["ok"].to_numpy(dtype=bool)
        sent = merged["sent_s"].notna().to_numpy()
        done = merged["done_s"].notna().to_numpy()
        attempted = sent | done
        flags = {
            "sent": sent, "completed": (status != 0) & done, "ok": ok, "failed": attempted & ~ok,
            "shed": np.isin(status, SHED_STATUSES), "degraded": ok & merged["degraded"].to_numpy(dtype=bool),
            "cached": ok & merged["cached"].to_numpy(dtype=bool),
        }
        for name, mask in flags.items():
            self.counters[name] += np.bincount(group[mask], minlength=n)
        chars = merged["chars"].to_numpy(dtype=float) * ok
        self.counters["ok_chars"] += np.bincount(group, weights=chars, minlength=n).astype(np.int64)
        latency_s = merged["latency_ms"].to_numpy(dtype=float) / 1000.0
        self.latency.observe(group, np.where(attempted, latency_s, np.nan))
        self.service.observe(group, merged["service_ms"].to_numpy(dtype=float) / 1000.0)
        lag = schedule_lag_s(merged)
        self.lag.observe(np.zeros(len(lag), dtype=np.int64), np.clip(lag, 0.0, None))
        self._lags.observe(lag)
        self._remember(merged, group, np.where(attempted, latency_s, np.nan), flags["failed"], flags["shed"])

    def _remember(self, merged: pd.DataFrame, group: np.ndarray, latency_s: np.ndarray,
                  failed: np.ndarray, shed: np.ndarray) -> None:
        """Put each request into the time bin of its end, for `recent`."""
        ends, prio = end_times(merged), self._group_priority[group]
        for column, mask in enumerate((np.ones(ends.size, dtype=bool), failed, shed)):
            self._recent.add(ends[mask], (prio[mask], np.full(int(mask.sum()), column)))
        timed = ~np.isnan(latency_s)
        bucket = self._recent_latency.index(np.maximum(latency_s[timed], 0.0))
        self._recent_hist.add(ends[timed], (prio[timed], bucket))

    def recent(self, now_s: float, window_s: float) -> RecentFigures:
        """Rate, error share and P99 per priority over requests that ended in the last `window_s`.

        The window's edges are resolved to RECENT_BIN_S and it reaches back RECENT_SPAN_S at most;
        each P99 is within 1% of the exact one (`LogHistogram`)."""
        counts = self._recent.window(now_s, window_s).astype(np.int64)
        hists = self._recent_hist.window(now_s, window_s)
        by_priority = {p: (int(counts[i, 0]), self._recent_latency.percentile(99, hists[i]) * 1000.0,
                           float(counts[i, 1] / counts[i, 0]))
                       for i, p in enumerate(self.priorities) if counts[i, 0] > 0}
        done, failed, shed = (int(v) for v in counts.sum(axis=0))
        return RecentFigures(window_s=window_s, done=done, failed=failed, shed=shed, by_priority=by_priority)

    def offered_between(self, start_s: float, end_s: float) -> int:
        """Offered rows (those `advance` has passed) with an intended send time in (start_s, end_s];
        exact for windows within the last RECENT_SPAN_S."""
        total = 0
        for offsets in self._recent_offsets:
            bounds = np.searchsorted(offsets, [start_s, end_s], side="right")
            total += int(bounds[1] - bounds[0])
        return total

    def lag_p99_ms(self) -> float:
        """The generator's schedule lag P99 so far (NaN before anything was sent), within 1%."""
        return self._lags.percentile(99) * 1000.0

    def total(self, name: str) -> int:
        return int(self.offered.sum()) if name == "offered" else int(self.counters[name].sum())


@dataclass(frozen=True)
class RecentFigures:
    """What ended in the last window: counts, and per priority (done, P99 ms, error share)."""

    window_s: float
    done: int
    failed: int
    shed: int
    by_priority: dict[str, tuple[int, float, float]]

    @property
    def rate(self) -> float:
        return self.done / self.window_s if self.window_s > 0 else 0.0


def end_times(requests: pd.DataFrame) -> np.ndarray:
    """When each request counts: its end, else its send, else its intended time."""
    done = requests["done_s"].to_numpy(dtype=float)
    sent = requests["sent_s"].to_numpy(dtype=float)
    return np.where(np.isfinite(done), done, np.where(np.isfinite(sent), sent,
                                                       requests["intended_s"].to_numpy(dtype=float)))
