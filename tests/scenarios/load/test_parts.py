"""Part files hold every recorded request once, with the part columns' types, however they were batched."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rushhour.scenarios.load.parts import CHUNK_ROWS, PART_COLUMNS, PartWriter, list_parts, read_parts


def _record(writer: PartWriter, row: int, **extra: object) -> None:
    fields: dict[str, object] = {
        "row": row, "intended_s": row * 0.01, "sent_s": row * 0.01 + 0.001, "done_s": row * 0.01 + 0.02,
        "pool_wait_ms": 0.0, "status": 200 if row % 3 else 503, "error": "" if row % 3 else "overloaded",
        "model": "fast", "cached": row % 2 == 0, "degraded": False, "node": f"n{row % 4}",
        "first_segment_s": float("nan"), "via": "translate",
    }
    writer.add(**{**fields, **extra})


def test_part_writer_keeps_every_row_once_across_batches_and_files(tmp_path: Path) -> None:
    writer = PartWriter(tmp_path, 3, batch_rows=2 * CHUNK_ROWS + 7, flush_s=3600.0)
    n = 5 * CHUNK_ROWS + 11
    for row in range(n):
        _record(writer, row)
    writer.flush()
    files = list_parts(tmp_path)
    parts = read_parts(files)
    assert len(files) == 3 and all(f.name.startswith("part-w003-") for f in files)
    assert parts["row"].tolist() == list(range(n))  # in the order recorded, none lost or doubled
    assert list(parts.columns) == list(PART_COLUMNS)
    np.testing.assert_allclose(parts["done_s"] - parts["intended_s"], 0.02)
    assert (parts["error"][parts["status"] == 503] == "overloaded").all()
    assert parts["cached"].tolist() == [row % 2 == 0 for row in range(n)]


def test_part_writer_gives_unrecorded_fields_their_defaults_and_types(tmp_path: Path) -> None:
    writer = PartWriter(tmp_path, 0)
    _record(writer, 0, output_tokens=12, first_token_s=0.005)
    _record(writer, 1, cached=1)  # an int where a bool belongs is converted, as pandas always did
    writer.flush()
    parts = read_parts(list_parts(tmp_path))
    assert parts["output_tokens"].tolist() == [12, -1] and parts["input_tokens"].tolist() == [-1, -1]
    assert parts["first_token_s"].iloc[0] == 0.005 and math.isnan(parts["first_token_s"].iloc[1])
    assert parts["cached"].tolist() == [True, True]
    assert str(parts["row"].dtype) == "int64" and str(parts["cached"].dtype) == "bool"
    assert str(parts["itl_p99_ms"].dtype) == "float64"


def test_an_empty_flush_writes_no_file(tmp_path: Path) -> None:
    writer = PartWriter(tmp_path, 0)
    writer.flush()
    writer.maybe_flush()
    assert list_parts(tmp_path) == []


def test_a_part_written_in_the_background_that_fails_raises_at_the_flush(tmp_path: Path) -> None:
    folder = tmp_path / "parts"
    writer = PartWriter(folder, 0, batch_rows=CHUNK_ROWS, flush_s=3600.0)
    folder.rmdir()  # the part file cannot be written now
    for row in range(CHUNK_ROWS):  # the last one fills the batch: its file goes to the pool's thread
        _record(writer, row)
    with pytest.raises(OSError):
        writer.flush()
