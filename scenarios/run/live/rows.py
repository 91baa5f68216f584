"""The schedule's rows as the live fold reads them: a frame in memory, or the run's schedule file
a row group at a time.

The fold needs two things from the schedule: its rows in order (offset and labels), to count the
offered load as the clock passes them, and the scheduled columns of the rows whose results just
arrived, to join them (`merge_requests`). A drill's schedule file is written a row group per chunk
(`rushhour.traffic_models.chunked.write_schedule`), results arrive close behind the rows being sent, so a
few row groups kept in memory serve nearly every lookup, and the fold's memory stays a few row
groups whatever the run's length. The file is opened on first use: the fold is made before the
drill writes it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from rushhour.traffic_models.facts import LABEL_COLUMNS

KEEP_GROUPS = 3
ORDER_BATCH_ROWS = 50_000


class ScheduleRows:
    """Scheduled rows by number, from a frame or a parquet file (its last KEEP_GROUPS row groups kept)."""

    def __init__(self, source: pd.DataFrame | Path, *, keep_groups: int = KEEP_GROUPS) -> None:
        self._frame = source.reset_index(drop=True) if isinstance(source, pd.DataFrame) else None
        self._path = source if isinstance(source, Path) else None
        self._keep = keep_groups
        self._file: pq.ParquetFile | None = None
        self._starts = np.zeros(1, dtype=np.int64)
        self._cache: OrderedDict[int, pd.DataFrame] = OrderedDict()

    def take(self, rows: np.ndarray) -> pd.DataFrame:
        """The scheduled columns of `rows` (schedule row numbers), in the order given."""
        if self._frame is not None:
            return self._frame.iloc[rows].reset_index(drop=True)
        self._open()
        groups = np.searchsorted(self._starts, rows, side="right") - 1
        order = np.argsort(groups, kind="stable")
        pieces = [self._group(int(g)).iloc[rows[groups == g] - self._starts[g]] for g in np.unique(groups)]
        if not pieces:
            assert self._file is not None
            return self._file.schema_arrow.empty_table().to_pandas()
        joined = pd.concat(pieces, ignore_index=True)
        return joined.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)

    def in_order(self) -> Iterator[pd.DataFrame]:
        """Every row's offset and labels, in schedule order, a batch at a time."""
        columns = ["offset_s", *LABEL_COLUMNS]
        if self._frame is not None:
            yield self._frame[columns]
            return
        self._open()
        assert self._file is not None
        for batch in self._file.iter_batches(batch_size=ORDER_BATCH_ROWS, columns=columns):
            yield batch.to_pandas()

    def _open(self) -> None:
        if self._file is None and self._path is not None:
            self._file = pq.ParquetFile(self._path)
            meta = self._file.metadata
            sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
            self._starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if sizes else self._starts

    def _group(self, index: int) -> pd.DataFrame:
        """Row group `index` of the file, from the cache when it is there."""
        if index in self._cache:
            self._cache.move_to_end(index)
            return self._cache[index]
        assert self._file is not None
        frame = self._file.read_row_group(index).to_pandas()
        self._cache[index] = frame
        while len(self._cache) > self._keep:
            self._cache.popitem(last=False)
        return frame
