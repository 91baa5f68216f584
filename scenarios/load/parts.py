"""Per-worker result parts and their merge into `requests.parquet`.

Workers never hold a whole run in memory: they keep each finished request's fields as they came,
turn every few hundred into an Arrow record batch (a short pause of the event loop, not one long
one per file), and write the batches out as parquet part files (atomically, so the runner can
read them while the run is going) on a thread of gevent's pool, so a flush does not pause sends.
The runner joins the parts back onto the schedule, so every scheduled
request gets exactly one row, answered or not: `fired` says how many times the generator
started it (0 = never sent). A row started twice is a generator fault; the first firing is kept
and the count stays visible (`duplicate_count`), never silently dropped.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import gevent
import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from gevent.event import AsyncResult

from kernel import contract

PART_COLUMNS = (
    "row", "intended_s", "sent_s", "done_s", "pool_wait_ms", "status", "error",
    "model", "cached", "degraded", "node", "first_segment_s", "via",
    "first_token_s", "last_token_s", "output_tokens", "itl_p50_ms", "itl_p99_ms", "itl_max_ms", "input_tokens",
)
STREAM_COLUMNS = tuple(contract.STREAM_COLUMNS)
REQUEST_COLUMNS = tuple(contract.REQUEST_COLUMNS)
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
        scratch = self._dir / f".warm-w{self._worker:03d}.tmp"
        pq.write_table(pa.Table.from_batches([part_batch([{"row": -1}])]), scratch)
        scratch.unlink()

    def _to_batch(self) -> None:
        if self._rows:
            rows, self._rows = self._rows, []
            self._batches.append(part_batch(rows))
            self._batched += len(rows)


def write_part(table: pa.Table, final: Path) -> None:
    """`table` to `final` atomically (a temporary file, then a rename); pyarrow lets go of the GIL
    while it encodes and writes, so on a pool thread this costs the event loop next to nothing."""
    tmp = final.with_suffix(".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, final)


def part_batch(rows: list[dict[str, object]]) -> pa.RecordBatch:
    """The rows as one Arrow batch with the part columns (missing fields get their defaults)."""
    columns = {name: [row.get(name, _PART_DEFAULTS.get(name)) for row in rows] for name in PART_COLUMNS}
    try:
        return pa.RecordBatch.from_pydict(columns, schema=PART_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a value of another type (1 for True): let pandas convert it
        frame = pd.DataFrame(columns)
        for name in PART_COLUMNS:
            kind = _part_dtype(name)
            frame[name] = frame[name].map(_text_or_none) if kind == "object" else frame[name].astype(kind)  # type: ignore[call-overload]
        return pa.RecordBatch.from_pandas(frame, schema=PART_SCHEMA, preserve_index=False)


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def read_parts(paths: list[Path]) -> pd.DataFrame:
    """Concatenate part files (an empty frame with the part columns when there are none)."""
    frames = [pd.read_parquet(p) for p in paths]
    if not frames:
        return pd.DataFrame({name: pd.Series(dtype=_part_dtype(name)) for name in PART_COLUMNS})
    return pd.concat(frames, ignore_index=True)


def _part_dtype(name: str) -> str:
    if name in ("row", "status", "output_tokens", "input_tokens"):
        return "int64"
    if name in ("cached", "degraded"):
        return "bool"
    if name in ("error", "model", "node", "via"):
        return "object"
    return "float64"


_ARROW_TYPES = {"int64": pa.int64(), "bool": pa.bool_(), "object": pa.string(), "float64": pa.float64()}
PART_SCHEMA = pa.schema([(name, _ARROW_TYPES[_part_dtype(name)]) for name in PART_COLUMNS])


def list_parts(directory: Path) -> list[Path]:
    """Finished part files in write order."""
    return sorted(directory.glob("part-w*.parquet"))


def duplicate_count(requests: pd.DataFrame) -> int:
    """Scheduled requests the generator started more than once (0 for results without `fired`)."""
    if "fired" not in requests.columns:
        return 0
    return int((requests["fired"].to_numpy() > 1).sum())


def merge_requests(schedule: pd.DataFrame, parts: pd.DataFrame, *,
                   documents_via_jobs: bool = False) -> pd.DataFrame:
    """One row per scheduled request with the contract's columns; unanswered rows get status 0.

    A row never recorded was never sent: status 0, error "not sent", no send or end time, the
    `via` it would have gone to. Parts written before a column existed get it empty.
    """
    fired = parts["row"].value_counts()
    parts = parts.drop_duplicates("row", keep="first").set_index("row")
    parts = parts.reindex(columns=[c for c in PART_COLUMNS if c != "row"])
    joined = schedule.reset_index(drop=True).join(parts, how="left")
    out = pd.DataFrame(index=joined.index)
    # a conversation's later turn is intended when the answer before it ended plus its think time,
    # known only to the generator: its recorded intended send counts, the schedule's when unsent
    out["intended_s"] = joined["intended_s"].astype(float).fillna(schedule["offset_s"].astype(float)).to_numpy()
    out["sent_s"] = joined["sent_s"].astype(float)
    out["done_s"] = joined["done_s"].astype(float)
    out["latency_ms"] = (out["done_s"] - out["intended_s"]) * 1000.0
    out["service_ms"] = (out["done_s"] - out["sent_s"]) * 1000.0
    out["pool_wait_ms"] = joined["pool_wait_ms"].astype(float)
    out["fired"] = fired.reindex(out.index, fill_value=0).to_numpy(dtype="int64")
    out["status"] = joined["status"].fillna(0).astype("int64")
    out["ok"] = (out["status"] >= 200) & (out["status"] < 300)
    out["error"] = _text(joined["error"], missing="not sent")
    for name in ("kind", "priority", "mode", "tenant", "phase"):
        out[name] = schedule[name].astype(str).to_numpy()
    out["chars"] = schedule["chars"].astype("int64").to_numpy()
    out["model"] = _text(joined["model"], missing="")
    out["cached"] = joined["cached"].fillna(False).astype(bool)
    out["degraded"] = joined["degraded"].fillna(False).astype(bool)
    out["node"] = _text(joined["node"], missing="")
    out["first_segment_ms"] = (joined["first_segment_s"].astype(float) - out["intended_s"]) * 1000.0
    planned = np.where(documents_via_jobs & (out["kind"] == "document"), "job", "translate")
    out["via"] = joined["via"].astype(object).where(joined["via"].notna(), planned).astype(str)
    return _stream_columns(out, joined, schedule).loc[:, list(REQUEST_COLUMNS)]


def _stream_columns(out: pd.DataFrame, joined: pd.DataFrame, schedule: pd.DataFrame) -> pd.DataFrame:
    """TTFT from the intended send; TPOT = (last token - first token) / (tokens - 1)."""
    first = joined["first_token_s"].astype(float).to_numpy()
    last = joined["last_token_s"].astype(float).to_numpy()
    tokens = joined["output_tokens"].astype(float).to_numpy()
    tokens = np.where(tokens >= 0, tokens, np.nan)
    out["ttft_ms"] = (first - out["intended_s"].to_numpy()) * 1000.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out["tpot_ms"] = np.where(tokens > 1, (last - first) * 1000.0 / (tokens - 1), np.nan)
    for name in ("itl_p50_ms", "itl_p99_ms", "itl_max_ms"):
        out[name] = joined[name].astype(float).to_numpy()
    out["output_tokens"] = tokens
    prompt = joined["input_tokens"].astype(float).to_numpy()
    out["input_tokens"] = np.where(prompt >= 0, prompt, np.nan)
    asked = schedule["max_tokens"] if "max_tokens" in schedule else pd.Series(0, index=schedule.index)
    out["max_tokens"] = asked.fillna(0).astype("int64").to_numpy()
    return out


def _text(column: pd.Series, *, missing: str) -> pd.Series:
    """Strings with NaN (row never recorded) replaced by `missing`."""
    return column.astype(object).where(column.notna(), missing).astype(str)
