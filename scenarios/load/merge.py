"""The parts merged onto the schedule by streaming: `requests.parquet` written a chunk at a time.

`merge_requests` joins a whole schedule with every part in memory, which a soak of millions of
requests cannot afford. Here the schedule is read a chunk of rows at a time (its row groups, via
pyarrow), each chunk joined with only the part rows that fall inside it, and the result appended
to the output as one row group. The parts are indexed first by the row range each one covers
(their parquet statistics, else their `row` column alone), so a chunk opens only the few part
files that can hold its rows. Every firing of a row lies in the chunk that holds the row, so the
`fired` counts and the first-firing rule are those of the whole merge: the file equals
`merge_requests(schedule, read_parts(parts))` written out (tests/scenarios/load/test_merge.py).
Memory is one chunk of the schedule and its parts, whatever the run's length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from rushhour.kernel.atomic import atomic_output
from rushhour.scenarios.load.parts import merge_requests, read_parts

DEFAULT_CHUNK_ROWS = 200_000


@dataclass(frozen=True)
class PartRange:
    """A part file and the lowest and highest schedule row it records."""

    path: Path
    first: int
    last: int


def part_ranges(paths: list[Path]) -> list[PartRange]:
    """The row range of each part, from its footer's statistics when it has them."""
    ranges = []
    for path in paths:
        bounds = _footer_bounds(path)
        if bounds is None:
            rows = pq.read_table(path, columns=["row"]).column("row")
            if len(rows) == 0:
                continue
            bounds = (int(pa.compute.min(rows).as_py()), int(pa.compute.max(rows).as_py()))
        ranges.append(PartRange(path, *bounds))
    return ranges


def merge_to_file(schedule_path: Path, part_paths: list[Path], out: Path, *, documents_via_jobs: bool = False,
                  chunk_rows: int = DEFAULT_CHUNK_ROWS, keep: Mapping[str, str] | None = None) -> int:
    """Write `out` (atomically) with one row per scheduled request; returns the rows written.
    `keep` names schedule columns carried onto every row with their types (an A/B run's arm and trial)."""
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows!r}.")
    batches = pq.ParquetFile(schedule_path).iter_batches(batch_size=chunk_rows)
    return merge_chunks_to_file((batch.to_pandas() for batch in batches), part_paths, out,
                                documents_via_jobs=documents_via_jobs, keep=keep,
                                empty=lambda: pq.read_table(schedule_path).to_pandas())


def merge_chunks_to_file(chunks: Iterable[pd.DataFrame], part_paths: list[Path], out: Path, *,
                         documents_via_jobs: bool = False, keep: Mapping[str, str] | None = None,
                         empty: Callable[[], pd.DataFrame] | None = None) -> int:
    """`merge_to_file` over the schedule's chunks given in order (a schedule drawn again rather than
    read back); `empty` gives the schedule's columns when no chunk comes."""
    ranges = part_ranges(part_paths)
    writer: pq.ParquetWriter | None = None
    start = 0
    with atomic_output(out) as tmp:
        try:
            for schedule in chunks:
                stop = start + len(schedule)
                merged = _merged(schedule, _parts_between(ranges, start, stop), documents_via_jobs, keep or {})
                table = pa.Table.from_pandas(merged, preserve_index=False)
                writer = writer or pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table.cast(writer.schema))
                start = stop
            if writer is None:  # a schedule without rows: the columns alone
                if empty is None:
                    raise ValueError(f'No schedule chunk was given for "{out}"; a requests file needs the columns.')
                frame = _merged(empty(), read_parts([]), documents_via_jobs, keep or {})
                pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)
        finally:
            if writer is not None:
                writer.close()
    return start


def _merged(schedule: pd.DataFrame, parts: pd.DataFrame, documents_via_jobs: bool,
            keep: Mapping[str, str]) -> pd.DataFrame:
    merged = merge_requests(schedule, parts, documents_via_jobs=documents_via_jobs)
    for column, dtype in keep.items():
        merged[column] = schedule[column].to_numpy().astype(dtype)
    return merged


def _parts_between(ranges: list[PartRange], start: int, stop: int) -> pd.DataFrame:
    """Part rows recording schedule rows [start, stop), renumbered from 0, in part order."""
    frames = []
    for part in ranges:
        if part.last < start or part.first >= stop:
            continue
        table = pq.read_table(part.path, filters=[("row", ">=", start), ("row", "<", stop)])
        frames.append(table.to_pandas())
    parts = pd.concat(frames, ignore_index=True) if frames else read_parts([])
    parts["row"] = parts["row"].astype("int64") - start
    return parts


def _footer_bounds(path: Path) -> tuple[int, int] | None:
    """(min, max) of the `row` column over every row group, when each group's footer has them."""
    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if "row" not in names or meta.num_row_groups == 0:
        return None
    lows, highs = [], []
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(names.index("row")).statistics
        if stats is None or not stats.has_min_max:
            return None
        lows.append(int(stats.min))
        highs.append(int(stats.max))
    return min(lows), max(highs)
