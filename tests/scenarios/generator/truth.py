"""Ground-truth loopback servers for the load tests: they answer, stall, fail or redirect at known
times and log, per scheduled row, when each request arrived and when it was answered.

The row travels in the payload's `tenant` ("r<row>"), so a test can set each row's fate in the
schedule and compare what the generator recorded with what really happened on the wire.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]

from rushhour.scenarios.generator.openloop import Share
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.session import LoadSession

HOLD_LIMIT_S = 15.0
"""No handler ever holds a request longer than this, whatever a test asks."""


def plain_text(_text_id: int, chars: int) -> str:
    return "x" * chars


def share_of(rows: pd.DataFrame | pa.Table, *, text_for: Callable[[int, int], str] = plain_text, **settings: Any) -> Share:
    """`rows` as one worker's share, fired by settings of which a test names only what the firer
    reads (the paths are never touched); a frame's rows become the table a worker holds."""
    fields: dict[str, Any] = {"host": "", "schedule_path": Path("schedule.parquet"), "work_dir": Path("load"),
                              "duration_s": 0.0, "timeout_margin_s": 1.0, **settings}
    table = pa.Table.from_pandas(rows, preserve_index=False) if isinstance(rows, pd.DataFrame) else rows
    return Share(rows=table, settings=LoadSettings(**fields), text_for=text_for)


@dataclass(frozen=True)
class Fate:
    """What the server does with one request: wait `after_s`, then answer `status` (0 = never
    answer: hold until the client gives up or the test ends), with `location` on a redirect."""

    status: int = 200
    after_s: float = 0.0
    location: str = ""


@dataclass
class Ledger:
    """What the server saw: per request the row, arrival and answer times (wall clock)."""

    fate: Callable[[int], Fate]
    arrivals: list[tuple[int, float]] = field(default_factory=list)
    answers: list[tuple[int, float, int]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)

    def arrive(self, row: int) -> None:
        with self.lock:
            self.arrivals.append((row, time.time()))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self, row: int, status: int) -> None:
        with self.lock:
            self.in_flight -= 1
            if status:
                self.answers.append((row, time.time(), status))

    def frame(self) -> pd.DataFrame:
        """One row per request received: row, arrived, answered (NaN if never), status."""
        with self.lock:
            arrived = pd.DataFrame(self.arrivals, columns=["row", "arrived"])
            answered = pd.DataFrame(self.answers, columns=["row", "answered", "status"])
        return arrived.merge(answered, on="row", how="left")


def _handler(ledger: Ledger) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            row = int(str(json.loads(body).get("tenant", "r-1"))[1:])
            ledger.arrive(row)
            fate = ledger.fate(row)
            status = 0
            try:
                if fate.status == 0:
                    ledger.release.wait(HOLD_LIMIT_S)
                    self.close_connection = True
                    return
                if fate.after_s:
                    ledger.release.wait(min(fate.after_s, HOLD_LIMIT_S))
                status = fate.status
                self._answer(fate)
            finally:
                ledger.leave(row, status)

        def _answer(self, fate: Fate) -> None:
            payload = ({"translation": "x", "model": "fast", "cached": False, "degraded": False,
                        "node": "fast-0", "chars": 1} if fate.status < 300
                       else {"error": {"code": f"http_{fate.status}", "message": "as scripted"}})
            data = json.dumps(payload).encode()
            self.send_response(fate.status)
            if fate.location:
                self.send_header("Location", fate.location)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up closes its socket under a held request; that is the point


@contextmanager
def truth_server(fate: Callable[[int], Fate]) -> Iterator[tuple[str, Ledger]]:
    """Serve on 127.0.0.1 (free port) until the block ends; held requests are released then."""
    ledger = Ledger(fate)
    server = _QuietServer(("127.0.0.1", 0), _handler(ledger))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", ledger
    finally:
        ledger.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def connection_trap() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback listener that keeps the first line of every connection (a proxy nobody should use).

    Tests running beside this one may reach its port by chance (a port they thought free), so what
    counts as diverted load is a request sent to a proxy, which `proxied` picks out."""
    seen: list[bytes] = []
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.5)
                try:
                    first = conn.recv(1024)
                except OSError:
                    first = b""
            seen.append(first.split(b"\r\n", 1)[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], seen
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()


def proxied(seen: list[bytes]) -> list[bytes]:
    """The request lines a client sent as to a proxy: a CONNECT, or a target in absolute form."""
    return [line for line in seen
            if line.startswith(b"CONNECT ") or b" http://" in line or b" https://" in line]


def row_schedule(n: int, rate: float, *, deadline_ms: float = 10000.0) -> pd.DataFrame:
    """A constant-rate schedule whose tenant names the row ("r<row>"), for `truth_server`."""
    rows = np.arange(n)
    return pd.DataFrame({
        "offset_s": rows / rate, "kind": "short", "chars": np.full(n, 40, dtype="int64"),
        "priority": "paid", "mode": "auto", "text_id": rows % 50, "tenant": [f"r{i}" for i in rows],
        "phase": "base", "deadline_ms": np.full(n, deadline_ms),
    })


def run_session(host: str, schedule: pd.DataFrame, work: Path, *, timeout_s: float) -> tuple[pd.DataFrame, float]:
    """Fire `schedule` through Locust at `host` (bounded); the merged requests and the wall start."""
    path = work / "schedule.parquet"
    schedule.to_parquet(path, index=False)
    duration = float(schedule["offset_s"].max()) + 1.0
    return fire(LoadSettings(host=host, schedule_path=path, work_dir=work / "load", duration_s=duration,
                             request_timeout_s=timeout_s, max_timeout_s=timeout_s + 1.0), schedule,
                grace_s=timeout_s + 30.0)


def fire(settings: LoadSettings, schedule: pd.DataFrame, *, grace_s: float) -> tuple[pd.DataFrame, float]:
    """One Locust load session run to its end (at most `grace_s` past the run's length), always
    stopped; the merged requests and the wall start."""
    session = LoadSession(settings)
    try:
        t0 = session.start()
        give_up = time.monotonic() + settings.duration_s + grace_s
        while not session.finished() and time.monotonic() < give_up:
            time.sleep(0.2)
    finally:
        session.stop()
    return session.requests(schedule), t0
