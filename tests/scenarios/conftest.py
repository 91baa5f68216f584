"""Fixtures for the scenarios tests: a tiny stalling HTTP server on 127.0.0.1, schedules, and a
reference server without its cache."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd
import pytest

from tests.support.server import RunningServer, start_server


class StallState:
    """Counts requests and, once, holds every request for `stall_s` from request `stall_at`."""

    def __init__(self) -> None:
        self.stall_at: int | None = None
        self.stall_s = 0.0
        self.count = 0
        self.lock = threading.Lock()
        self.open = threading.Event()
        self.open.set()

    def arrive(self) -> None:
        with self.lock:
            self.count += 1
            stall_now = self.count == self.stall_at
            if stall_now:
                self.open.clear()
        if stall_now:
            time.sleep(self.stall_s)
            self.open.set()
        self.open.wait(timeout=30)


def _handler(state: StallState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            state.arrive()
            body = json.dumps({"translation": "x", "model": "fast", "cached": False,
                               "degraded": False, "node": "fast-0", "chars": 1}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def stall_server() -> Iterator[tuple[str, StallState]]:
    """A threaded loopback server; set `state.stall_at`/`stall_s` to make it stall once."""
    state = StallState()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        state.open.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def uncached_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A small reference server without its cache (every request reaches a node), one per test
    module; the tests that share it leave every node ready."""
    running = start_server(tmp_path_factory.mktemp("uncached-server"), {"cache": {"enabled": False}})
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def make_schedule() -> Callable[..., pd.DataFrame]:
    """Build a constant-rate schedule with the traffic_models column layout."""

    def build(rate: float, duration_s: float, *, deadline_ms: float = 10000.0) -> pd.DataFrame:
        offsets = np.arange(0.0, duration_s, 1.0 / rate)
        n = len(offsets)
        return pd.DataFrame({
            "offset_s": offsets, "kind": "short", "chars": np.full(n, 40, dtype="int64"),
            "priority": np.where(np.arange(n) % 2 == 0, "paid", "free"), "mode": "auto",
            "text_id": np.arange(n, dtype="int64") % 50, "tenant": "acme", "phase": "base",
            "deadline_ms": np.full(n, deadline_ms),
        })

    return build

