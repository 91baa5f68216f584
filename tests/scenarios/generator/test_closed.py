"""The closed-loop shape: users follow the schedule's arrival rate; personas take the share's rows
a batch at a time, the same rows in the same order as the whole share."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from rushhour.scenarios.generator import closed
from rushhour.scenarios.generator.closed import ClosedDrill, shape_users, users_curve
from rushhour.scenarios.generator.openloop import Share, worker_share
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import publish_start
from rushhour.scenarios.load.parts import list_parts, read_parts
from rushhour.scenarios.protocols.outcome import Outcome
from rushhour.traffic_models import load_traffic_model, text_for
from rushhour.traffic_models.chunked import iter_schedule, write_schedule


def test_users_curve_follows_rate_in_bins() -> None:
    offsets = np.concatenate([np.arange(20) / 2, 10 + np.arange(100) / 10])  # 2/s then 10/s
    users = users_curve(offsets, 20.0, pacing_s=1.0, bin_s=5.0)
    assert len(users) == 20
    assert (users[:10] == 2).all() and (users[10:] == 10).all()


def test_users_curve_has_a_floor() -> None:
    assert (users_curve(np.array([0.1]), 10.0, minimum=2) >= 2).all()


@pytest.fixture
def schedule_file(tmp_path: Path) -> Path:
    path = tmp_path / "schedule.parquet"
    write_schedule(path, iter_schedule(load_traffic_model("diurnal"), seed=4, time_scale=2880.0, duration_s=30,
                                       rate_scale=10.0, chunk_rows=250))
    return path


def _settings(path: Path, tmp_path: Path, processes: int) -> LoadSettings:
    return LoadSettings(host="", schedule_path=path, work_dir=tmp_path / "load", duration_s=30.0,
                        processes=processes, mode="closed")


@pytest.mark.parametrize("processes", [1, 3])
def test_users_curve_read_in_batches_equals_the_whole_schedules(schedule_file: Path, tmp_path: Path,
                                                                processes: int) -> None:
    offsets = pq.read_table(schedule_file).column("offset_s").to_numpy()
    whole = users_curve(offsets, 30.0, minimum=processes)
    assert np.unique(whole).size > 2  # the rate changes over the run
    np.testing.assert_array_equal(shape_users(_settings(schedule_file, tmp_path, processes), batch_rows=97), whole)


def _closed_run(settings: LoadSettings, index: int, batch_rows: int) -> tuple[list[dict[str, object]], list[int]]:
    """Every row a ClosedDrill sends (its payload) and the rows of each batch it read; reading the
    schedule whole fails the test."""
    sent: list[dict[str, object]] = []
    held: list[int] = []
    batches = closed.share_batches

    def spied(*args: object, **kwargs: object) -> Iterator[Share]:
        for share in batches(*args, **kwargs):  # type: ignore[arg-type]
            held.append(len(share.rows))
            yield share

    def whole(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("the closed loop read the schedule whole")

    def send(payload: dict[str, object], _timeout_s: float) -> Outcome:
        sent.append(payload)
        return Outcome(status=200, model="fast")

    drill = ClosedDrill(settings, index, batch_rows=batch_rows)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(closed, "share_batches", spied)
        patched.setattr(pq, "read_table", whole)
        try:
            while drill.step(send):
                pass
            assert not drill.step(send)  # a share is sent once
        finally:
            gc.unfreeze()  # the drill froze what it loaded before its start, as a worker does
    return sent, held


def test_closed_drill_sends_the_whole_share_a_batch_at_a_time(schedule_file: Path, tmp_path: Path) -> None:
    settings = _settings(schedule_file, tmp_path, 2)
    settings.control_dir.mkdir(parents=True)
    publish_start(settings.control_dir, time.time() - 3600.0)  # begun long ago: no row waits for its time
    sent, held = _closed_run(settings, 1, 97)
    share = Share(rows=worker_share(pq.read_table(schedule_file), 1, 2), settings=settings, text_for=text_for)
    assert len(held) > 3 and max(held) <= 49  # a batch of 97 schedule rows at a time, never the whole share
    assert sent == [share.payload(i) for i in range(len(share.rows))]  # the same rows in the same order
    parts = read_parts(list_parts(settings.parts_dir)).sort_values("row")
    assert parts["row"].tolist() == share.rows.column("row").to_pylist() and (parts["status"] == 200).all()
    np.testing.assert_array_equal(parts["intended_s"], share.offsets)
    assert (settings.control_dir / "ready-1").read_text() == str(len(share.rows))
    assert (settings.control_dir / "done-1").is_file()
