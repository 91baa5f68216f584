"""The streaming merge writes the same requests table as the in-memory merge, chunk by chunk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.scenarios.load.merge import merge_chunks_to_file, merge_to_file, part_ranges
from rushhour.scenarios.load.parts import PART_COLUMNS, merge_requests, read_parts
from rushhour.traffic_models import generate_schedule, load_traffic_model
from rushhour.traffic_models.chunked import iter_schedule, write_schedule


def _parts_frame(rows: np.ndarray, schedule: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    intended = schedule["offset_s"].to_numpy()[rows]
    status = np.where(rng.random(rows.size) < 0.1, 503, 200)
    frame = pd.DataFrame(dict.fromkeys(PART_COLUMNS, np.nan), index=range(rows.size))
    frame["row"] = rows.astype(np.int64)
    frame["intended_s"], frame["sent_s"] = intended, intended + rng.exponential(0.002, rows.size)
    frame["done_s"] = frame["sent_s"] + rng.lognormal(np.log(0.1), 0.5, rows.size)
    frame["pool_wait_ms"] = 0.0
    frame["status"] = status
    frame["error"] = np.where(status == 200, "", "overloaded")
    frame["model"], frame["node"], frame["via"] = "quality", "quality-0", "translate"
    frame["cached"], frame["degraded"] = rng.random(rows.size) < 0.2, False
    frame["output_tokens"], frame["input_tokens"] = -1, -1
    return frame


def _drill_folder(tmp_path: Path) -> tuple[Path, list[Path], pd.DataFrame]:
    """A schedule in row groups, and parts from two interleaved workers: some rows never sent, a few
    fired twice, part files not in row order."""
    model = load_traffic_model("constant:400")
    schedule_path = tmp_path / "schedule.parquet"
    write_schedule(schedule_path, iter_schedule(model, seed=2, duration_s=30, chunk_rows=3_000))
    schedule = generate_schedule(model, seed=2, duration_s=30)
    rng = np.random.default_rng(9)
    sent = np.flatnonzero(rng.random(len(schedule)) < 0.97)
    twice = rng.choice(sent, 25, replace=False)
    paths = []
    for worker in (0, 1):
        mine = sent[sent % 2 == worker]
        if worker == 1:
            mine = np.sort(np.concatenate([mine, twice]))
        for seq, rows in enumerate(np.array_split(mine, 9)):
            path = tmp_path / "parts" / f"part-w{worker:03d}-{seq:06d}.parquet"
            path.parent.mkdir(exist_ok=True)
            _parts_frame(rows, schedule, rng).to_parquet(path, index=False)
            paths.append(path)
    return schedule_path, paths[::-1], schedule


@pytest.mark.parametrize("chunk_rows", [1_000, 4_999, 1_000_000])
def test_streamed_requests_equal_the_in_memory_merge(tmp_path: Path, chunk_rows: int) -> None:
    schedule_path, paths, schedule = _drill_folder(tmp_path)
    out = tmp_path / "requests.parquet"
    rows = merge_to_file(schedule_path, paths, out, chunk_rows=chunk_rows)
    whole = tmp_path / "whole.parquet"
    merge_requests(schedule, read_parts(paths)).to_parquet(whole, index=False)
    assert rows == len(schedule)
    streamed = pd.read_parquet(out)
    pd.testing.assert_frame_equal(streamed, pd.read_parquet(whole))
    assert (streamed["fired"] == 2).sum() == 25 and (streamed["status"] == 0).sum() > 0


def test_part_ranges_come_from_the_footer_and_skip_empty_parts(tmp_path: Path) -> None:
    _, paths, _ = _drill_folder(tmp_path)
    empty = tmp_path / "parts" / "part-w009-000000.parquet"
    read_parts([]).to_parquet(empty, index=False)
    ranges = part_ranges([*paths, empty])
    assert len(ranges) == len(paths)
    for part in ranges:
        rows = pd.read_parquet(part.path, columns=["row"])["row"]
        assert (part.first, part.last) == (rows.min(), rows.max())


def test_a_schedule_nobody_fired_gives_every_row_not_sent(tmp_path: Path) -> None:
    schedule_path, _, schedule = _drill_folder(tmp_path)
    out = tmp_path / "requests.parquet"
    merge_to_file(schedule_path, [], out, chunk_rows=2_000)
    requests = pd.read_parquet(out)
    assert len(requests) == len(schedule) and (requests["error"] == "not sent").all()


def test_kept_schedule_columns_ride_along_and_drawn_chunks_merge_like_the_file(tmp_path: Path) -> None:
    schedule_path, paths, schedule = _drill_folder(tmp_path)
    keep = {"tenant": "object", "text_id": "int64"}
    from_file, from_chunks = tmp_path / "file.parquet", tmp_path / "chunks.parquet"
    merge_to_file(schedule_path, paths, from_file, chunk_rows=5_000, keep=keep)
    chunks = iter_schedule(load_traffic_model("constant:400"), seed=2, duration_s=30, chunk_rows=5_000)
    assert merge_chunks_to_file(chunks, paths, from_chunks, keep=keep) == len(schedule)
    whole = merge_requests(schedule, read_parts(paths))
    for column, dtype in keep.items():
        whole[column] = schedule[column].to_numpy().astype(dtype)
    pd.testing.assert_frame_equal(pd.read_parquet(from_file), whole)
    pd.testing.assert_frame_equal(pd.read_parquet(from_chunks), whole)


def test_merging_no_chunk_without_the_columns_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="No schedule chunk was given"):
        merge_chunks_to_file(iter(()), [], tmp_path / "requests.parquet")
