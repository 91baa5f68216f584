"""A worker fires its share once: a re-run after a crash sends nothing again, and a duplicate that
slips through anyway is counted and reported, never silently dropped."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import gevent
import numpy as np
import pandas as pd
import pytest
import yaml
from gevent.pool import Group

from rushhour.reports.rundata.results import load_run
from rushhour.reports.summary.aggregate import summarise
from rushhour.scenarios.generator import openloop
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import publish_start, run_worker
from rushhour.scenarios.load.health import generator_figures
from rushhour.scenarios.load.parts import (
    duplicate_count,
    list_parts,
    merge_requests,
    read_parts,
)
from rushhour.scenarios.protocols.outcome import Outcome
from tests.scenarios.generator.truth import row_schedule

ROWS = 30
CRASH_AT_ROW = 10


def _config(tmp_path: Path, schedule: pd.DataFrame) -> LoadSettings:
    schedule.to_parquet(tmp_path / "schedule.parquet", index=False)
    (tmp_path / "control").mkdir()
    return LoadSettings(host="", schedule_path=tmp_path / "schedule.parquet", work_dir=tmp_path,
                        timeout_margin_s=1.0, request_timeout_s=2.0, duration_s=1.0)


def test_a_worker_that_raised_mid_share_never_fires_a_row_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The rows are 200 ms apart and the start is set once the worker is ready: the firer sleeps
    # before each row, which lets the row before it start sending. Rows due back to back (a start
    # already past, or a busy machine holding the process longer than the gap) would be spawned
    # without a pause, and the crash would cancel ones that never began.
    schedule = row_schedule(ROWS, rate=5.0)
    config = _config(tmp_path, schedule)
    sent: list[int] = []

    def send(payload: dict[str, object], _timeout: float) -> Outcome:
        sent.append(int(str(payload["tenant"])[1:]))
        gevent.sleep(0.01)
        return Outcome(status=200)

    class CrashingGroup(Group):  # the worker raises a third of the way through its share
        spawned = 0

        def spawn(self, *args: Any, **kwargs: Any) -> Any:
            CrashingGroup.spawned += 1
            if CrashingGroup.spawned == CRASH_AT_ROW:
                raise MemoryError("cannot start another greenlet")
            return super().spawn(*args, **kwargs)

    def start_when_ready() -> None:
        while not (config.control_dir / "ready-0").exists():
            gevent.sleep(0.01)
        publish_start(config.control_dir, time.time() + 0.2)

    monkeypatch.setattr(openloop, "Group", CrashingGroup)
    starter = gevent.spawn(start_when_ready)
    with pytest.raises(MemoryError):
        run_worker(config, 0, send)
    refired = run_worker(config, 0, send)  # Locust runs a task that raised again
    starter.join(timeout=1.0)

    assert len(sent) == CRASH_AT_ROW - 1 and max(Counter(sent).values()) == 1, sorted(sent)
    assert refired is False
    requests = merge_requests(schedule, read_parts(list_parts(config.parts_dir)))
    assert duplicate_count(requests) == 0 and set(requests["fired"]) <= {0, 1}
    assert sorted(requests.index[requests["fired"] == 1]) == sorted(sent)
    assert (requests.loc[requests["fired"] == 0, "error"] == "not sent").all()
    failed = (config.control_dir / "failed-0").read_text(encoding="utf-8")
    assert "cannot start another greenlet" in failed


def test_a_duplicate_is_counted_kept_once_and_makes_the_run_invalid(tmp_path: Path) -> None:
    schedule = row_schedule(3, rate=10.0)
    parts = pd.DataFrame({"row": [0, 1, 1], "intended_s": [0.0, 0.1, 0.1], "sent_s": [0.0, 0.1, 0.9],
                          "done_s": [0.05, 0.15, 0.95], "pool_wait_ms": [0.0, 0.0, 0.0],
                          "status": [200, 200, 503], "error": ["", "", "overloaded"], "model": "fast",
                          "cached": False, "degraded": False, "node": "", "first_segment_s": np.nan,
                          "via": "translate"})
    requests = merge_requests(schedule, parts)
    assert list(requests["fired"]) == [1, 2, 0] and duplicate_count(requests) == 1
    assert requests["status"].iloc[1] == 200 and requests["sent_s"].iloc[1] == 0.1  # the first firing
    assert generator_figures(requests)["duplicates"] == 1

    root = tmp_path / "results"
    root.mkdir()
    (root / "scenario.yaml").write_text(yaml.safe_dump({"name": "dup"}))
    requests.to_parquet(root / "requests.parquet", index=False)
    summary = summarise(load_run(root))
    assert summary["verdict"] == "invalid" and summary["generator"]["duplicates"] == 1
    assert "fired more than once" in summary["verdict_reason"]
