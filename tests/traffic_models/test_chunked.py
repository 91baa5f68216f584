from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from rushhour.traffic_models import generate_schedule, load_traffic_model
from rushhour.traffic_models.chunked import iter_schedule, write_schedule
from rushhour.traffic_models.facts import LABEL_COLUMNS, ScheduleFacts


def _whole_and_chunked(model, chunk_rows: int, **window) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    whole = generate_schedule(model, **window)
    chunks = list(iter_schedule(model, chunk_rows=chunk_rows, **window))
    return whole, chunks


@pytest.mark.parametrize("chunk_rows", [333, 4096, 10_000_000])
def test_chunks_end_to_end_equal_the_whole_promo_day_schedule(chunk_rows: int) -> None:
    whole, chunks = _whole_and_chunked(load_traffic_model("promo-day"), chunk_rows,
                                       seed=11, time_scale=60, rate_scale=5.0, start_clock_s=18 * 3600.0,
                                       duration_s=240.0)
    assert len(whole) > 10_000
    assert all(len(c) <= chunk_rows for c in chunks) and len(chunks) == -(-len(whole) // chunk_rows)
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole)


def test_chunks_equal_the_whole_schedule_without_repetition_and_with_a_flash_crowd() -> None:
    model = load_traffic_model("flash-crowd")
    unique = model.model_copy(update={"mix": model.mix.model_copy(update={"repetition": None})})
    whole, chunks = _whole_and_chunked(unique, 1_333, seed=4, time_scale=120, rate_scale=20.0)
    assert len(chunks) > 3
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole)


def test_another_seed_gives_other_chunks() -> None:
    model = load_traffic_model("constant:200")
    a = pd.concat(iter_schedule(model, seed=1, duration_s=30, chunk_rows=1000), ignore_index=True)
    b = pd.concat(iter_schedule(model, seed=2, duration_s=30, chunk_rows=1000), ignore_index=True)
    assert len(a) != len(b) or not a["offset_s"].equals(b["offset_s"])


def test_an_empty_schedule_is_one_empty_chunk_with_the_columns() -> None:
    model = load_traffic_model("constant:50")
    whole, chunks = _whole_and_chunked(model, 100, seed=3, rate_scale=0.0, duration_s=10)
    assert len(chunks) == 1
    pd.testing.assert_frame_equal(chunks[0], whole)


def test_written_schedule_has_a_row_group_per_chunk_and_reads_back_whole(tmp_path: Path) -> None:
    model = load_traffic_model("constant:300")
    path = tmp_path / "schedule.parquet"
    rows = write_schedule(path, iter_schedule(model, seed=5, duration_s=40, chunk_rows=2_500))
    whole = generate_schedule(model, seed=5, duration_s=40)
    assert rows == len(whole)
    assert pq.ParquetFile(path).num_row_groups == -(-len(whole) // 2_500)
    pd.testing.assert_frame_equal(pd.read_parquet(path), whole)


def test_bad_chunk_size_is_named() -> None:
    with pytest.raises(ValueError, match="chunk_rows must be at least 1, got 0"):
        next(iter_schedule(load_traffic_model("constant:5"), seed=1, chunk_rows=0))


def test_facts_gathered_a_chunk_at_a_time_are_those_of_the_whole_schedule() -> None:
    window = {"time_scale": 60.0, "rate_scale": 5.0, "start_clock_s": 18 * 3600.0, "duration_s": 240.0}
    model = load_traffic_model("promo-day")
    whole = generate_schedule(model, seed=11, **window)
    facts = ScheduleFacts.of(iter_schedule(model, seed=11, chunk_rows=997, **window))
    bins = np.bincount(np.floor(whole["offset_s"].to_numpy() / 5.0).astype(int))
    assert facts.count == len(whole)
    assert facts.peak_rps == bins.max() / 5.0
    assert facts.longest_deadline_ms == whole["deadline_ms"].max()
    labels = whole[list(LABEL_COLUMNS)].astype(str).drop_duplicates().itertuples(index=False, name=None)
    assert facts.labels == tuple(sorted(labels)) and len(facts.labels) > 4
    assert ScheduleFacts.of([whole.iloc[:0]]).peak_rps == 0.0  # an empty schedule has no peak
