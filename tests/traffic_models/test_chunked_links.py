"""The schedule file is written through kernel/atomic: whole or absent, never through a planted link."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from rushhour.kernel.atomic import LinkedOutputError
from rushhour.traffic_models import load_traffic_model
from rushhour.traffic_models.chunked import iter_schedule, write_schedule
from tests.support.planted import VICTIM_TEXT, plant, victim_file


def _chunks() -> Iterator[pd.DataFrame]:
    return iter_schedule(load_traffic_model("diurnal"), seed=4, time_scale=2880.0, duration_s=10, chunk_rows=50)


def test_a_schedule_planted_as_a_link_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    """Before: pyarrow's ParquetWriter opened `schedule.parquet` following a link planted there."""
    victim = victim_file(tmp_path)
    plant(tmp_path / "schedule.parquet", victim)
    with pytest.raises(LinkedOutputError, match=r'schedule.parquet": it is a symbolic link'):
        write_schedule(tmp_path / "schedule.parquet", _chunks())
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT


def test_a_schedule_cut_short_by_an_error_leaves_no_file(tmp_path: Path) -> None:
    def failing() -> Iterator[pd.DataFrame]:
        chunks = _chunks()
        yield next(chunks)
        raise RuntimeError("the draw failed half way")

    with pytest.raises(RuntimeError, match="half way"):
        write_schedule(tmp_path / "schedule.parquet", failing())
    assert list(tmp_path.iterdir()) == []


def test_a_schedule_written_whole_reads_back_every_row(tmp_path: Path) -> None:
    rows = write_schedule(tmp_path / "schedule.parquet", _chunks())
    expected = pd.concat(list(_chunks()), ignore_index=True)
    assert rows == len(expected) > 0 and pq.read_table(tmp_path / "schedule.parquet").num_rows == rows
    assert [p.name for p in tmp_path.iterdir()] == ["schedule.parquet"]
