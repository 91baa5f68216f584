"""The schedule in chunks of rows: the same requests as `generate_schedule`, in bounded memory.

A whole schedule draws its random numbers column by column (every arrival's spacing, then every
kind, then each kind's texts, then priorities, tenants and modes), so a row's values sit at
different places of one random stream. A first pass walks that stream chunk by chunk without
keeping anything but the sums it needs (the total of the spacings, the rows of each kind) and
notes the generator's state where each column starts; a second pass then draws every column
from its own copy of the stream, a chunk of rows at a time. numpy draws these distributions
element by element, so a column drawn in pieces holds the same numbers as one drawn whole:
chunks laid end to end equal the whole schedule, row for row (tests/traffic_models/test_chunked.py).
Memory is a few chunks whatever the length, at the cost of drawing the stream twice.

Generated models without conversations are drawn this way; a replayed log or a model with
sessions is read whole anyway, so its schedule comes as one chunk.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from rushhour.kernel.atomic import atomic_output
from rushhour.traffic_models.catalog import KIND_ID_STRIDE, UNIQUE_ID_BASE, catalog_sizes, text_lengths, zipf_ranks
from rushhour.traffic_models.mix import mix_frame, output_lengths, pick
from rushhour.traffic_models.mixspec import MixSpec
from rushhour.traffic_models.model import TrafficModel
from rushhour.traffic_models.phases import phase_column, window_phases
from rushhour.traffic_models.schedule import COLUMNS, _rng, generate_schedule, intensity
from rushhour.traffic_models.window import Window, check_drawable, check_rate_scale, resolve_window

DEFAULT_CHUNK_ROWS = 250_000
"""About 20 MB of schedule columns per chunk."""


@dataclass
class _Streams:
    """One generator per column of the schedule, each placed where that column's draws start."""

    spacing: np.random.Generator
    kind: np.random.Generator
    texts: list[np.random.Generator]
    priority: np.random.Generator
    tenant: np.random.Generator
    mode: np.random.Generator
    count: int
    spacing_total: float


def iter_schedule(
    model: TrafficModel, *, seed: int, time_scale: float = 1.0, rate_scale: float = 1.0,
    start_clock_s: float = 0.0, duration_s: float | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS,
) -> Iterator[pd.DataFrame]:
    """The rows of `generate_schedule(model, seed=seed, ...)`, `chunk_rows` at a time, in order."""
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows!r}.")
    if model.replay is not None or model.sessions is not None:
        yield generate_schedule(model, seed=seed, time_scale=time_scale, rate_scale=rate_scale,
                                start_clock_s=start_clock_s, duration_s=duration_s)
        return
    window = resolve_window(model, time_scale=time_scale, start_clock_s=start_clock_s, duration_s=duration_s)
    check_drawable(window)
    check_rate_scale(rate_scale)
    grid, cumulative = intensity(model, window, rate_scale)
    streams = _place_streams(model.mix, seed, float(cumulative[-1]), chunk_rows)
    if streams.count == 0:
        yield _chunk(model, window, streams, np.empty(0, dtype=np.float64))
    carry = 0.0
    for start in range(0, streams.count, chunk_rows):
        size = min(chunk_rows, streams.count - start)
        spacings = np.cumsum(np.concatenate([[carry], streams.spacing.exponential(size=size)]))[1:]
        carry = float(spacings[-1])
        uniforms = spacings / streams.spacing_total * float(cumulative[-1])
        offsets = np.asarray(window.to_offset(np.interp(uniforms, cumulative, grid)), dtype=np.float64)
        yield _chunk(model, window, streams, offsets)


def write_schedule(path: Path, chunks: Iterator[pd.DataFrame]) -> int:
    """Write chunks to one parquet file, a row group each, holding one chunk at a time; rows written."""
    writer: pq.ParquetWriter | None = None
    rows = 0
    with atomic_output(path) as handle:  # whole or absent, never through a link planted at `path`
        try:
            for frame in chunks:
                table = pa.Table.from_pandas(frame, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(handle, table.schema)
                writer.write_table(table)
                rows += len(frame)
        finally:
            if writer is not None:
                writer.close()
        if writer is None:
            raise ValueError(f'No chunk was given for "{path}"; a schedule file needs at least its columns.')
    return rows


def _place_streams(mix: MixSpec, seed: int, total: float, chunk_rows: int) -> _Streams:
    """Walk the whole stream once, noting where each column's draws begin (the first pass)."""
    rng = _rng(seed)
    count = int(rng.poisson(total)) if total > 0 else 0
    spacing = _copy(rng)
    spacing_total = 0.0
    for size in _sizes(count + 1, chunk_rows):
        spacing_total = float(np.cumsum(np.concatenate([[spacing_total], rng.exponential(size=size)]))[-1])
    kind_stream = _copy(rng)
    fractions = np.array([k.fraction for k in mix.kinds.values()])
    per_kind = np.zeros(fractions.size, dtype=np.int64)
    for size in _sizes(count, chunk_rows):
        per_kind += np.bincount(pick(fractions, size, rng), minlength=fractions.size)
    texts = []
    for rows in per_kind:
        texts.append(_copy(rng))
        _walk_texts(mix, int(rows), chunk_rows, rng)
    columns = []
    for _ in ("priority", "tenant", "mode"):
        columns.append(_copy(rng))
        for size in _sizes(count, chunk_rows):
            rng.random(size)
    priority, tenant, mode = columns
    return _Streams(spacing, kind_stream, texts, priority, tenant, mode, count, spacing_total)


def _walk_texts(mix: MixSpec, rows: int, chunk_rows: int, rng: np.random.Generator) -> None:
    """Draw (and drop) one kind's text ids, as `draw_texts` draws them."""
    for size in _sizes(rows, chunk_rows):
        if mix.repetition is not None:
            rng.random(size)
        else:
            rng.integers(UNIQUE_ID_BASE, 2 * UNIQUE_ID_BASE, size)


def _chunk(model: TrafficModel, window: Window, streams: _Streams, offsets: np.ndarray) -> pd.DataFrame:
    mix, size = model.mix, offsets.size
    texts = _texts(mix, pick(np.array([k.fraction for k in mix.kinds.values()]), size, streams.kind), streams)
    frame = mix_frame(mix, texts, _people(mix, size, streams))
    frame.insert(0, "offset_s", offsets)
    frame["phase"] = phase_column(window_phases(model, window), offsets)
    return frame[COLUMNS]


def _texts(mix: MixSpec, kind: np.ndarray, streams: _Streams) -> dict[str, np.ndarray]:
    """`draw_texts` for one chunk: each kind's ids from that kind's own stream."""
    kinds = list(mix.kinds.values())
    text_id = np.empty(kind.size, dtype=np.int64)
    chars = np.empty(kind.size, dtype=np.int32)
    rep = mix.repetition
    sizes = catalog_sizes(rep.catalog_size, np.array([k.fraction for k in kinds])) if rep else None
    for code, spec in enumerate(kinds):
        rows = np.flatnonzero(kind == code)
        stream = streams.texts[code]
        if rep is not None and sizes is not None:
            text_id[rows] = code * KIND_ID_STRIDE + zipf_ranks(int(sizes[code]), rep.exponent, rows.size, stream)
        else:
            text_id[rows] = stream.integers(UNIQUE_ID_BASE, 2 * UNIQUE_ID_BASE, rows.size)
        chars[rows] = text_lengths(text_id[rows], spec.chars, rep.seed if rep else 0)
    return {"kind": kind, "text_id": text_id, "chars": chars, "max_tokens": output_lengths(mix, kind, text_id)}


def _people(mix: MixSpec, size: int, streams: _Streams) -> dict[str, Any]:
    """`draw_people` for one chunk: priority, tenant and mode each from its own stream."""
    specs = list(mix.priorities.values())
    priority = pick(np.array([p.fraction for p in specs]), size, streams.priority)
    tenants = np.array([p.tenants for p in specs])
    first_tenant = np.concatenate([[0], np.cumsum(tenants)[:-1]])
    tenant = first_tenant[priority] + np.floor(streams.tenant.random(size) * tenants[priority]).astype(np.int64)
    mode = pick(np.array(list(mix.modes.values())), size, streams.mode)
    deadline = np.array([p.deadline_ms for p in specs], dtype=np.int32)[priority]
    return {"priority": priority, "tenant": tenant, "mode": mode, "deadline_ms": deadline}


def _copy(rng: np.random.Generator) -> np.random.Generator:
    """An independent generator at the same place of the same stream."""
    bit_generator = type(rng.bit_generator)()
    bit_generator.state = rng.bit_generator.state
    return np.random.Generator(bit_generator)


def _sizes(total: int, chunk_rows: int) -> Iterator[int]:
    for start in range(0, total, chunk_rows):
        yield min(chunk_rows, total - start)
