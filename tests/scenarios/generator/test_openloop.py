"""The open-loop user keeps its schedule whatever the server (or the generator) does."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import gevent
import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from rushhour.scenarios.generator.openloop import OpenLoopFirer, worker_share
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.parts import PartWriter, list_parts, merge_requests, read_parts
from rushhour.scenarios.load.session import LoadSession
from rushhour.scenarios.protocols.outcome import Outcome, outcome_from
from tests.scenarios.generator.truth import fire, share_of


def _run_locust(host: str, schedule: pd.DataFrame, tmp_path: Path, processes: int = 1) -> pd.DataFrame:
    path = tmp_path / "schedule.parquet"
    schedule.to_parquet(path, index=False)
    duration = float(schedule["offset_s"].max()) + 1.0
    settings = LoadSettings(host=host, schedule_path=path, work_dir=tmp_path / "load", duration_s=duration,
                            processes=processes, max_timeout_s=15.0)
    return fire(settings, schedule, grace_s=30.0)[0]


@pytest.mark.slow
def test_openloop_keeps_schedule_while_server_stalls(
    stall_server: tuple[str, object], make_schedule: Callable[..., pd.DataFrame],
    tmp_path: Path,
) -> None:
    host, state = stall_server
    state.stall_at, state.stall_s = 100, 2.0  # type: ignore[attr-defined]
    schedule = make_schedule(rate=50, duration_s=6.0)
    requests = _run_locust(host, schedule, tmp_path)

    assert len(requests) == len(schedule)
    assert requests["ok"].all(), requests["error"].value_counts()
    lag_ms = (requests["sent_s"] - requests["intended_s"]) * 1000.0
    # sent on time although replies stopped for 2 s (a closed loop would lag by the whole stall);
    # the bound leaves a busy machine's late wake-ups room, a fifth of the stall
    assert np.percentile(lag_ms, 99) < 0.2 * state.stall_s * 1000.0  # type: ignore[attr-defined]
    corrected_p99 = np.percentile(requests["latency_ms"], 99)
    assert corrected_p99 > 1500.0
    # the stall hit every request scheduled during it, not just one reply as in a closed loop
    assert int((requests["latency_ms"] > 500.0).sum()) >= 40


@pytest.mark.slow
def test_openloop_corrects_for_generator_stall(tmp_path: Path) -> None:
    """When the generator itself falls behind, corrected latency shows it and service time does not."""
    offsets = np.arange(0.0, 2.0, 0.01)
    rows = pd.DataFrame({"row": np.arange(len(offsets)), "offset_s": offsets,
                         "text_id": 1, "chars": 10, "mode": "auto", "priority": "paid",
                         "tenant": "a", "deadline_ms": 5000.0})
    plan = share_of(rows)

    def send(_payload: dict[str, object], _timeout: float) -> Outcome:
        gevent.sleep(0.005)
        return Outcome(status=200, model="fast")

    writer = PartWriter(tmp_path, 0)
    t0 = time.time() + 0.1
    hog = gevent.spawn_later(0.6, time.sleep, 1.0)  # blocks the whole loop, like a busy generator
    OpenLoopFirer(plan, send, writer).run(t0)
    hog.join()
    parts = read_parts(list_parts(tmp_path))
    assert sorted(parts["row"]) == list(range(len(offsets)))
    latency = (parts["done_s"] - parts["intended_s"]) * 1000.0
    service = (parts["done_s"] - parts["sent_s"]) * 1000.0
    assert np.percentile(latency, 99) > 700.0
    # the rows due while the loop was blocked (from 0.5 s to 1.5 s on the firer's clock): their
    # corrected latency carries the wait, their service time does not. Medians of the same rows, so
    # that a neighbour slowing the whole test (or one reply caught in flight by the hog) moves both
    stalled = ((parts["intended_s"] > 0.6) & (parts["intended_s"] < 1.4)).to_numpy()
    assert stalled.sum() >= 70
    assert np.median(latency[stalled]) > 300.0
    assert np.median(service[stalled]) < 0.25 * np.median(latency[stalled])


def test_worker_share_splits_rows_without_overlap(make_schedule: Callable[..., pd.DataFrame]) -> None:
    schedule = make_schedule(rate=10, duration_s=2.0)
    shares = [worker_share(pa.Table.from_pandas(schedule, preserve_index=False), i, 3).to_pandas() for i in range(3)]
    rows = np.concatenate([s["row"].to_numpy() for s in shares])
    assert sorted(rows) == list(range(len(schedule)))
    assert all((s["row"] % 3 == i).all() for i, s in enumerate(shares))
    for share in shares:  # each row's fields as the schedule has them
        pd.testing.assert_frame_equal(share.drop(columns="row"), schedule.iloc[share["row"]].reset_index(drop=True))


def test_merge_requests_gives_unanswered_rows_status_zero(
    make_schedule: Callable[..., pd.DataFrame],
) -> None:
    schedule = make_schedule(rate=4, duration_s=1.0)
    parts = pd.DataFrame({"row": [0, 2], "intended_s": [0.0, 0.5], "sent_s": [0.001, 0.502],
                          "done_s": [0.05, float("nan")], "status": [200, 0],
                          "error": ["", "timeout"], "model": ["fast", ""], "cached": [True, False],
                          "degraded": [False, False], "node": ["fast-0", ""]})
    merged = merge_requests(schedule, parts)
    assert list(merged["status"]) == [200, 0, 0, 0]
    assert list(merged["error"]) == ["", "not sent", "timeout", "not sent"]
    assert merged["latency_ms"].iloc[0] == 50.0
    assert merged["cached"].iloc[0] and merged["ok"].iloc[0] and not merged["ok"].iloc[2]


def test_outcome_from_reads_success_and_error_bodies() -> None:
    ok = outcome_from(200, b'{"model": "quality", "cached": true, "degraded": false, "node": "q-0"}')
    assert ok == Outcome(status=200, model="quality", cached=True, node="q-0")
    shed = outcome_from(503, b'{"error": {"code": "overloaded", "message": "busy"}}')
    assert shed.status == 503 and shed.error == "overloaded"
    assert outcome_from(0, None, "ConnectionRefusedError").error == "ConnectionRefusedError"


@pytest.mark.slow
def test_openloop_two_processes_split_and_merge(
    stall_server: tuple[str, object], make_schedule: Callable[..., pd.DataFrame], tmp_path: Path,
) -> None:
    host, state = stall_server
    schedule = make_schedule(rate=40, duration_s=3.0)
    requests = _run_locust(host, schedule, tmp_path, processes=2)
    assert len(requests) == len(schedule)
    assert requests["ok"].all(), requests["error"].value_counts()
    assert state.count == len(schedule)  # type: ignore[attr-defined]  # each row sent exactly once
    parts = list_parts(tmp_path / "load" / "parts")
    assert {p.name[:9] for p in parts} == {"part-w000", "part-w001"}
    np.testing.assert_allclose(requests["intended_s"], schedule["offset_s"])


@pytest.mark.slow
def test_closed_loop_mode_keeps_one_row_per_scheduled_request(
    stall_server: tuple[str, object], make_schedule: Callable[..., pd.DataFrame], tmp_path: Path,
) -> None:
    host, state = stall_server
    schedule = make_schedule(rate=10, duration_s=4.0)
    path = tmp_path / "schedule.parquet"
    schedule.to_parquet(path, index=False)
    session = LoadSession(LoadSettings(host=host, schedule_path=path, work_dir=tmp_path / "load",
                                       duration_s=4.0, mode="closed", max_timeout_s=10.0))
    try:
        session.start()
        give_up = time.monotonic() + 40.0
        while not session.finished() and time.monotonic() < give_up:
            time.sleep(0.2)
    finally:
        session.stop()
    requests = session.requests(schedule)
    assert len(requests) == len(schedule)
    assert requests["ok"].mean() > 0.9, requests["error"].value_counts()
    sent = requests.dropna(subset=["sent_s"])
    assert (sent["sent_s"] >= sent["intended_s"] - 0.001).all()  # never ahead of schedule
