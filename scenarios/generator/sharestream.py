"""A worker's share of the schedule read a batch of rows at a time, the next batch made ready on
a real thread while the current one fires.

A soak's schedule has millions of rows; a worker that read its whole share would hold each row in
a table and again as plain Python values (`RowColumns`), a gigabyte an hour at 1,000 req/s.
Here the schedule file is read `SHARE_BATCH_ROWS` rows at a time (`pyarrow.parquet.ParquetFile.
iter_batches`), each batch cut to this worker's rows (`row % workers == index`, as `worker_share`
cuts the whole) and turned into a `Share`, in Arrow tables throughout (the load generator's
processes do without pandas). The batches laid end to end are the whole share, row for
row (tests/scenarios/generator/test_sharestream.py). A schedule of conversations is read whole: a
session's turns must stay with one worker, and such schedules come from a log read whole anyway.

Reading and converting a batch costs tens of milliseconds of CPU, which on the event loop would
delay the sends due meanwhile, so `Prefetched` runs it on gevent's thread pool (real OS threads
even when threading is monkey-patched); the loop waits only if a batch is not ready by the time
the one before it has been fired.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar, cast

import gevent
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from rushhour.scenarios.generator.openloop import Share, rows_at, worker_share
from rushhour.scenarios.generator.settings import LoadSettings

SHARE_BATCH_ROWS = 50_000
"""Schedule rows read at a time (a worker keeps its part of two such batches)."""
T = TypeVar("T")


def share_tables(path: Path, index: int, workers: int, *, batch_rows: int = SHARE_BATCH_ROWS) -> Iterator[pa.Table]:
    """Worker `index`'s rows of the schedule at `path`, a batch at a time, each with its `row` number."""
    schedule = pq.ParquetFile(path)
    if "session" in schedule.schema_arrow.names or schedule.metadata.num_rows == 0:
        yield worker_share(schedule.read(), index, workers)  # pq.read_table would import pandas
        return
    start = 0
    for batch in schedule.iter_batches(batch_size=batch_rows):
        mine = np.flatnonzero((np.arange(batch.num_rows) + start) % workers == index)
        yield rows_at(pa.Table.from_batches([batch]), mine, mine + start)
        start += batch.num_rows


def share_size(path: Path, index: int, workers: int) -> int:
    """How many rows worker `index` fires, from the file's footer (a schedule of conversations is counted)."""
    schedule = pq.ParquetFile(path)
    if "session" in schedule.schema_arrow.names:
        return sum(table.num_rows for table in share_tables(path, index, workers))
    total = schedule.metadata.num_rows
    return max(0, (total - index + workers - 1) // workers)


def share_stream(settings: LoadSettings, index: int, text_for: Callable[[int, int], str], *,
                 batch_rows: int = SHARE_BATCH_ROWS) -> Iterator[Share]:
    """The share as `Share`s of one batch each, their plain-Python columns already built."""
    for table in share_tables(settings.schedule_path, index, settings.workers, batch_rows=batch_rows):
        share = Share(rows=table, settings=settings, text_for=text_for)
        _ = share.columns, share.sessions, share.offsets
        yield share


class Prefetched(Generic[T]):
    """An iterator whose next item is produced on gevent's thread pool ahead of being asked for:
    the first at once, each later one as soon as the one before it was taken."""

    def __init__(self, items: Iterator[T]) -> None:
        self._items = items
        self._pool = gevent.get_hub().threadpool
        self._pending = self._pool.spawn(_next_or_end, items)

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._pending is None:
            raise StopIteration
        done, item = self._pending.get()
        if done:
            self._pending = None
            raise StopIteration
        self._pending = self._pool.spawn(_next_or_end, self._items)
        return cast(T, item)


def _next_or_end(items: Iterator[T]) -> tuple[bool, T | None]:
    for item in items:
        return False, item
    return True, None
