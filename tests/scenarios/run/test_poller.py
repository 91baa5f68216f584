"""The shared poller under the drill's and the capacity search's status samplers, against a stub
whose answers the test sets: rows land on the run's clock, a target without /v1/status is asked
once, and stopping reports the failures the rate limit held back."""

from __future__ import annotations

import time
from collections.abc import Callable

from rushhour.scenarios.capacity.pool_status import SAMPLE_COLUMNS, StatusSampler
from rushhour.scenarios.run.targetmetrics import TargetMetricsScraper
from tests.support.stub import stub_server

POOLS = {"pools": {"quality": {"nodes_alive": 2, "nodes_ready": 1, "slots_busy": 3, "inflight": 4, "queue_depth": 5}}}


def _wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the poller did not get there in time"
        time.sleep(0.01)


def test_sampler_rows_are_typed_and_timed_on_the_step_clock() -> None:
    with stub_server({"/v1/status": (200, {}, POOLS)}) as (url, _asked):
        origin = time.time()
        sampler = StatusSampler(url + "/", origin=origin, interval_s=0.05).start()
        _wait_for(lambda: sampler.samples >= 3)
        frame = sampler.stop()
        stopped_at = time.time() - origin
    assert list(frame.columns) == list(SAMPLE_COLUMNS)
    assert len(frame) >= 3 and set(frame["pool"]) == {"quality"}
    assert frame[list(SAMPLE_COLUMNS[2:])].iloc[0].tolist() == [2, 1, 3, 4, 5]
    assert str(frame["slots_busy"].dtype) == "int64"
    assert frame["t_s"].is_monotonic_increasing and 0.0 <= frame["t_s"].iloc[0] <= frame["t_s"].iloc[-1] <= stopped_at


def test_sampler_asks_a_target_without_status_once_and_stops() -> None:
    with stub_server({}) as (url, asked):
        sampler = StatusSampler(url, origin=time.time(), interval_s=0.02).start()
        _wait_for(lambda: not sampler._thread.is_alive())
        frame = sampler.stop()
    assert frame.empty and list(frame.columns) == list(SAMPLE_COLUMNS)
    assert asked == ["/v1/status"]


def test_stopping_reports_the_failures_the_rate_limit_held_back() -> None:
    reported: list[dict[str, object]] = []
    with stub_server({}) as (url, asked):  # /metrics answers 404 every time
        scraper = TargetMetricsScraper(url + "/metrics", origin=time.time(), interval_s=0.02, on_error=reported.append)
        scraper.start()
        _wait_for(lambda: len(asked) >= 4)
        scraper.stop()
        tries = len(asked)
    assert reported[0]["errors"] == 1  # the first failure at once
    assert sum(int(str(r["errors"])) for r in reported) == tries == scraper.errors.totals["target metrics"]
    assert scraper.samples == 0
