"""Per-worker result parts: each finished request's fields written as parquet part files.

Workers never hold a whole run in memory: they keep each finished request's fields as they came,
turn every few hundred into an Arrow record batch (a short pause of the event loop, not one long
one per file), and write the batches out as parquet part files (atomically, so the runner can
read them while the run is going) on a thread of gevent's pool, so a flush does not pause sends.
This module is what a load-generator process imports to record; it needs pyarrow, not pandas
(`rushhour.scenarios.load.parts` reads the parts back and merges them with pandas, in the runner).
"""

from __future__ import annotations

import importlib.abc
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import gevent
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from gevent.event import AsyncResult

from rushhour.kernel import contract
from rushhour.kernel.atomic import atomic_output

__all__ = ["CHUNK_ROWS", "PART_COLUMNS", "PART_SCHEMA", "PartWriter", "keep_pandas_out", "list_parts", "part_batch",
           "part_dtype", "write_part"]

PART_COLUMNS = tuple(contract.PART_COLUMNS)
_PART_DEFAULTS: dict[str, object] = {
    "first_token_s": float("nan"), "last_token_s": float("nan"), "output_tokens": -1, "input_tokens": -1,
    "itl_p50_ms": float("nan"), "itl_p99_ms": float("nan"), "itl_max_ms": float("nan"),
}
DEFAULT_BATCH_ROWS = 5000
DEFAULT_FLUSH_S = 1.0
CHUNK_ROWS = 256
"""Rows turned into one Arrow batch at a time: the event loop pauses ~0.3 ms for it, where a whole
part file's rows at once would pause it for milliseconds and delay the sends due meanwhile."""


class PartWriter:
    """Buffers finished requests and writes them as `part-w<worker>-<seq>.parquet` files."""

    def __init__(
        self, directory: Path, worker: int, *,
        batch_rows: int = DEFAULT_BATCH_ROWS, flush_s: float = DEFAULT_FLUSH_S,
    ) -> None:
        self._dir = directory
        self._worker = worker
        self._batch_rows = batch_rows
        self._flush_s = flush_s
        self._seq = 0
        self._last_flush = time.monotonic()
        self._rows: list[dict[str, object]] = []
        self._batches: list[pa.RecordBatch] = []
        self._batched = 0
        self._pending: list[AsyncResult] = []
        directory.mkdir(parents=True, exist_ok=True)
        self._warm_up()

    def add(self, **values: object) -> None:
        """Record one finished (or abandoned) request; flushes when the batch is full."""
        self._rows.append(values)
        if len(self._rows) >= CHUNK_ROWS:
            self._to_batch()
        self.maybe_flush()

    def maybe_flush(self) -> None:
        """Flush if the batch is full or the last flush is older than `flush_s`; the file is
        written on a thread of gevent's pool, so the event loop goes on sending meanwhile."""
        held = self._batched + len(self._rows)
        if held and (held >= self._batch_rows or time.monotonic() - self._last_flush >= self._flush_s):
            self._flush(background=True)

    def flush(self) -> None:
        """Write the buffered rows (if any) to a new part file, atomically, and return once every
        part file handed to the pool before it is on disk too."""
        self._flush(background=False)
        pending, self._pending = self._pending, []
        for write in pending:
            write.get()  # a failed write raises here

    def _flush(self, *, background: bool) -> None:
        self._last_flush = time.monotonic()
        self._to_batch()
        if not self._batches:
            return
        table = pa.Table.from_batches(self._batches)
        self._batches, self._batched = [], 0
        final = self._dir / f"part-w{self._worker:03d}-{self._seq:06d}.parquet"
        self._seq += 1
        if not background:
            write_part(table, final)
            return
        for write in [w for w in self._pending if w.ready()]:
            write.get()  # a failed write raises here
            self._pending.remove(write)
        self._pending.append(gevent.get_hub().threadpool.spawn(write_part, table, final))

    def _warm_up(self) -> None:
        """Convert and write one row to a scratch file in the parts folder, then remove it: a
        process's first conversion and first parquet file set up what they need (tens of ms),
        which would otherwise pause the event loop at the run's first batch and first flush."""
        scratch = self._dir / f".warm-w{self._worker:03d}.parquet"
        write_part(pa.Table.from_batches([part_batch([{"row": -1}])]), scratch)
        scratch.unlink()

    def _to_batch(self) -> None:
        if self._rows:
            rows, self._rows = self._rows, []
            self._batches.append(part_batch(rows))
            self._batched += len(rows)


def write_part(table: pa.Table, final: Path) -> None:
    """`table` to `final` through `rushhour.kernel.atomic` (a fresh temporary file created
    exclusively, never through a link, then a rename; unsynced, as a part matters to the run that
    writes it and to a rebuild after a kill); pyarrow lets go of the GIL while it encodes and
    writes, so on a pool thread this costs the event loop next to nothing."""
    with atomic_output(final, sync=False) as handle:
        pq.write_table(table, handle)


def part_batch(rows: list[dict[str, object]]) -> pa.RecordBatch:
    """The rows as one Arrow batch with the part columns (missing fields get their defaults)."""
    columns = {name: [row.get(name, _PART_DEFAULTS.get(name)) for row in rows] for name in PART_COLUMNS}
    try:
        return pa.RecordBatch.from_pydict(columns, schema=PART_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a value of another type (1 for True): convert it to the column's
        cast = {name: [_CASTS[part_dtype(name)](value) for value in values] for name, values in columns.items()}
        return pa.RecordBatch.from_pydict(cast, schema=PART_SCHEMA)


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _float(value: object) -> float:
    return math.nan if value is None else float(value)  # type: ignore[arg-type]


_CASTS: dict[str, Callable[[object], object]] = {
    "int64": lambda value: int(value),  # type: ignore[call-overload]
    "bool": bool, "float64": _float, "object": _text_or_none,
}


def keep_pandas_out() -> None:
    """Have pyarrow settle, for this process, that pandas is not there.

    pyarrow imports pandas the first time it converts Python values (to ask whether they are pandas
    objects), and a load generator's process converts every part it writes: that import costs
    about 0.4 s of CPU and tens of MB in every Locust process, which never hands a table to pandas.
    pyarrow asks once per process and keeps the answer, so its first conversion is made here while
    the import is refused; the refusal is lifted at once, so code that imports pandas (pyarrow's
    own `to_pandas` included, which asks again) still gets it. That this process's own modules
    import no pandas is checked by construction (an import-linter contract in pyproject.toml); this
    hook is for pyarrow's import, made at run time where no static check can see it. It is a finder
    rather than `sys.modules["pandas"] = None`, because pyarrow's compiled import takes whatever
    `sys.modules` holds, None included, and then fails on it instead of settling that pandas is absent.
    """
    if "pandas" in sys.modules:
        return  # loaded already (the runner's process): nothing to save
    refusal = _RefusePandas()
    sys.meta_path.insert(0, refusal)
    try:
        pa.RecordBatch.from_pydict({"row": [0]})
    finally:
        sys.meta_path.remove(refusal)


class _RefusePandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas is kept out of this load generator's process", name=name)


def part_dtype(name: str) -> str:
    """A part column's dtype as the contract declares it (`rushhour.kernel.contract.PART_COLUMNS`)."""
    return contract.PART_COLUMNS.get(name, "float64")


_ARROW_TYPES = {"int64": pa.int64(), "bool": pa.bool_(), "object": pa.string(), "float64": pa.float64()}
PART_SCHEMA = pa.schema([(name, _ARROW_TYPES[part_dtype(name)]) for name in PART_COLUMNS])


def list_parts(directory: Path) -> list[Path]:
    """Finished part files in write order."""
    return sorted(directory.glob("part-w*.parquet"))
