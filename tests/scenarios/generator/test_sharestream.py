"""A worker's share read in batches: the same rows as the whole share, fired once each."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from rushhour.scenarios.generator.openloop import OpenLoopFirer, worker_share
from rushhour.scenarios.generator.sharestream import Prefetched, share_size, share_tables
from rushhour.scenarios.load.parts import PartWriter, list_parts, read_parts
from rushhour.scenarios.protocols.outcome import Outcome
from rushhour.traffic_models import load_traffic_model
from rushhour.traffic_models.chunked import iter_schedule, write_schedule
from tests.scenarios.generator.truth import share_of


@pytest.fixture(scope="module")
def schedule_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("share") / "schedule.parquet"
    write_schedule(path, iter_schedule(load_traffic_model("constant:100"), seed=4, duration_s=30, chunk_rows=1_000))
    return path


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_batches_laid_end_to_end_are_the_whole_share(schedule_file: Path, workers: int) -> None:
    whole = pq.read_table(schedule_file)
    for index in range(workers):
        batches = list(share_tables(schedule_file, index, workers, batch_rows=777))
        assert len(batches) > 1 and all(b.num_rows <= 777 for b in batches)  # a batch at a time, never the file
        pd.testing.assert_frame_equal(pa.concat_tables(batches).to_pandas(), worker_share(whole, index, workers).to_pandas())
        assert share_size(schedule_file, index, workers) == worker_share(whole, index, workers).num_rows


def test_a_schedule_of_conversations_is_read_whole(tmp_path: Path) -> None:
    rows = pd.DataFrame({"offset_s": np.arange(6) * 0.1, "session": [0, 1, 0, 1, 2, 2], "turn": [0, 0, 1, 1, 0, 1]})
    path = tmp_path / "schedule.parquet"
    rows.to_parquet(path, index=False)
    batches = list(share_tables(path, 1, 2, batch_rows=2))
    assert len(batches) == 1  # a session's turns stay with one worker, whatever the batch size
    assert batches[0].to_pydict() == {"row": [1, 3], **rows.iloc[[1, 3]].to_dict(orient="list")}
    assert batches[0].equals(worker_share(pq.read_table(path), 1, 2))
    assert share_size(path, 1, 2) == 2


def test_prefetched_gives_every_item_in_order_and_raises_what_the_source_raised() -> None:
    assert list(Prefetched(iter(range(5)))) == [0, 1, 2, 3, 4]

    def broken() -> Iterator[int]:
        yield 1
        raise RuntimeError("the schedule file went away")

    items = Prefetched(broken())
    assert next(items) == 1
    with pytest.raises(RuntimeError, match="went away"):
        next(items)


def test_firer_fires_each_batch_once_at_its_offsets(tmp_path: Path) -> None:
    offsets = np.arange(0.0, 0.3, 0.01)
    rows = pd.DataFrame({"row": np.arange(offsets.size), "offset_s": offsets, "text_id": 1, "chars": 10,
                         "mode": "auto", "priority": "paid", "tenant": "a", "deadline_ms": 5000.0})
    first, second, third = (share_of(rows.iloc[a:b].reset_index(drop=True)) for a, b in ((0, 10), (10, 20), (20, 30)))

    def send(_payload: dict[str, object], _timeout: float) -> Outcome:
        return Outcome(status=200, model="fast")

    OpenLoopFirer(first, send, PartWriter(tmp_path, 0)).run(time.time() + 0.05, more=Prefetched(iter([second, third])))
    parts = read_parts(list_parts(tmp_path)).sort_values("row")
    assert parts["row"].tolist() == list(range(offsets.size))  # every row once, none from a batch twice
    np.testing.assert_allclose(parts["intended_s"], offsets)
    assert (parts["status"] == 200).all()
