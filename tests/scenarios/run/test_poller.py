"""The shared poller under the drill's and the capacity search's status samplers, against a small
server whose answers the test sets: rows land on the run's clock, a target without /v1/status is
asked once, and stopping reports the failures the rate limit held back."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scenarios.capacity.probe import SAMPLE_COLUMNS, StatusSampler
from scenarios.run.targetmetrics import TargetMetricsScraper


class _Status:
    """GET /v1/status answers `body` (or 404 when None); every request is counted."""

    def __init__(self) -> None:
        self.body: dict | None = {"pools": {"quality": {"nodes_alive": 2, "nodes_ready": 1, "slots_busy": 3,
                                                        "inflight": 4, "queue_depth": 5}}}
        self.hits = 0
        status = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status.hits += 1
                if status.body is None or self.path != "/v1/status":
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(status.body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def status() -> Iterator[_Status]:
    server = _Status()
    yield server
    server.stop()


def _wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the poller did not get there in time"
        time.sleep(0.01)


def test_sampler_rows_are_typed_and_timed_on_the_step_clock(status: _Status) -> None:
    origin = time.time()
    sampler = StatusSampler(status.url + "/", origin=origin, interval_s=0.05).start()
    _wait_for(lambda: sampler.samples >= 3)
    frame = sampler.stop()
    stopped_at = time.time() - origin
    assert list(frame.columns) == list(SAMPLE_COLUMNS)
    assert len(frame) >= 3 and set(frame["pool"]) == {"quality"}
    assert frame[list(SAMPLE_COLUMNS[2:])].iloc[0].tolist() == [2, 1, 3, 4, 5]
    assert str(frame["slots_busy"].dtype) == "int64"
    assert frame["t_s"].is_monotonic_increasing and 0.0 <= frame["t_s"].iloc[0] <= frame["t_s"].iloc[-1] <= stopped_at


def test_sampler_asks_a_target_without_status_once_and_stops(status: _Status) -> None:
    status.body = None
    sampler = StatusSampler(status.url, origin=time.time(), interval_s=0.02).start()
    _wait_for(lambda: not sampler._thread.is_alive())
    frame = sampler.stop()
    assert frame.empty and list(frame.columns) == list(SAMPLE_COLUMNS)
    assert status.hits == 1


def test_stopping_reports_the_failures_the_rate_limit_held_back(status: _Status) -> None:
    status.body = None  # /metrics answers 404 every time
    reported: list[dict[str, object]] = []
    scraper = TargetMetricsScraper(status.url + "/metrics", origin=time.time(), interval_s=0.02,
                                   on_error=reported.append)
    scraper.start()
    _wait_for(lambda: status.hits >= 4)
    scraper.stop()
    assert reported[0]["errors"] == 1  # the first failure at once
    assert sum(int(r["errors"]) for r in reported) == status.hits == scraper.errors.totals["target metrics"]
    assert scraper.samples == 0
