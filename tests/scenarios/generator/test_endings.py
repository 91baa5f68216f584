"""Every attempted request ends somewhere, and `done_s` is when it really ended.

Ground truth comes from a loopback server that answers 504 after 2 s for one share of the rows,
holds another share past the client's time-out, redirects a third to a host nobody allowed, and
logs when each request arrived and was answered.
"""

from __future__ import annotations

import time
from pathlib import Path

import gevent
import httpx
import numpy as np
import pytest

from rushhour.scenarios.generator import handoff
from rushhour.scenarios.generator.openloop import OpenLoopFirer
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.parts import PartWriter, list_parts, read_parts
from rushhour.scenarios.load.session import LoadSession
from rushhour.scenarios.protocols.outcome import Outcome
from tests.scenarios.generator.truth import (
    Fate,
    connection_trap,
    proxied,
    row_schedule,
    run_session,
    share_of,
    truth_server,
)

TIMEOUT_S = 3.0
ELSEWHERE = "http://[2001:db8::1]:9/v1/translate"  # a documentation address: never reachable, never contacted


def fate_by_row(row: int) -> Fate:
    return {1: Fate(504, after_s=2.0), 3: Fate(0), 5: Fate(302, location=ELSEWHERE)}.get(row % 6, Fate(200, 0.02))


@pytest.mark.slow
def test_failed_and_abandoned_requests_end_when_they_really_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    schedule = row_schedule(48, rate=16.0)
    with connection_trap() as (trap_port, trapped), truth_server(fate_by_row) as (host, ledger):
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{trap_port}")
        requests, t0 = run_session(host, schedule, tmp_path, timeout_s=TIMEOUT_S)
        truth = ledger.frame().set_index("row")
    kind = requests.index.to_numpy() % 6
    assert requests["done_s"].notna().all(), requests[requests["done_s"].isna()]
    assert (requests["fired"] == 1).all() and len(truth) == len(schedule)  # each row sent once
    np.testing.assert_allclose(requests["latency_ms"], (requests["done_s"] - requests["intended_s"]) * 1000)
    np.testing.assert_allclose(requests["service_ms"], (requests["done_s"] - requests["sent_s"]) * 1000)

    answered = kind != 3  # every answer, whatever its status, ends when the server answered it
    true_end = truth["answered"].reindex(requests.index).to_numpy() - t0
    np.testing.assert_allclose(requests["done_s"][answered], true_end[answered], atol=0.1)
    slow = requests[kind == 1]
    assert (slow["status"] == 504).all() and (slow["latency_ms"] > 1950).all(), slow
    # failures count at their end time, not as missing: the server's own 2 s plus however late the row left
    held_by_server = (truth["answered"] - truth["arrived"]).reindex(slow.index) * 1000
    np.testing.assert_allclose(slow["latency_ms"] - (slow["sent_s"] - slow["intended_s"]) * 1000, held_by_server,
                               atol=100)

    held = requests[kind == 3]  # the client gave up at its time-out: that moment is the end
    assert (held["status"] == 0).all() and (held["error"] == "timeout").all(), held["error"]
    np.testing.assert_allclose(held["done_s"] - held["sent_s"], TIMEOUT_S, atol=0.1)

    moved = requests[kind == 5]  # the 3xx is the answer: nothing followed it elsewhere
    assert (moved["status"] == 302).all() and not moved["ok"].any(), moved[["status", "error"]]
    assert (moved["service_ms"] < (truth["answered"] - truth["arrived"]).reindex(moved.index) * 1000 + 500).all()
    assert proxied(trapped) == []  # no proxy variable diverted the load


@pytest.mark.slow
def test_requests_in_flight_when_the_load_stops_end_at_the_stop(tmp_path: Path) -> None:
    """Ctrl-C or the drill's deadline stops Locust: what is still in flight ends at that moment."""
    schedule = row_schedule(10, rate=10.0)
    schedule.to_parquet(tmp_path / "schedule.parquet", index=False)
    with truth_server(lambda _row: Fate(0)) as (host, ledger):
        session = LoadSession(LoadSettings(host=host, schedule_path=tmp_path / "schedule.parquet",
                                           work_dir=tmp_path / "load", duration_s=2.0, request_timeout_s=30.0,
                                           max_timeout_s=31.0))
        try:
            t0 = session.start()
            while len(ledger.frame()) < len(schedule) and time.time() - t0 < 10.0:
                time.sleep(0.05)
            stopped_at = time.time() - t0
        finally:
            session.stop()
        requests = session.requests(schedule)
    assert (requests["error"] == "cancelled").all(), requests["error"].value_counts()
    assert requests["sent_s"].notna().all() and (requests["fired"] == 1).all()
    np.testing.assert_allclose(requests["done_s"], stopped_at, atol=0.5)


def test_requests_cancelled_at_the_run_end_end_at_the_cancel(tmp_path: Path) -> None:
    rows = row_schedule(10, rate=20.0).assign(row=np.arange(10))
    plan = share_of(rows, request_timeout_s=30.0)

    def never_answers(_payload: dict[str, object], _timeout: float) -> Outcome:
        handoff.mark_handed()  # on the wire at once, then no answer
        gevent.sleep(60)
        return Outcome(status=200)

    t0 = time.time() + 0.05
    OpenLoopFirer(plan, never_answers, PartWriter(tmp_path, 0)).run(t0, drain_s=0.5)
    cancelled_at = time.time() - t0
    parts = read_parts(list_parts(tmp_path)).sort_values("row")
    assert len(parts) == 10 and (parts["error"] == "cancelled").all()
    assert parts["done_s"].notna().all() and parts["sent_s"].notna().all()
    np.testing.assert_allclose(parts["done_s"], cancelled_at, atol=0.15)  # ~0.95 s: last send + drain


def test_durations_ignore_a_wall_clock_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An NTP step of the wall clock during a send must not change a measured duration."""
    rows = row_schedule(4, rate=10.0).assign(row=np.arange(4))
    plan = share_of(rows, request_timeout_s=5.0)
    real_time = time.time
    step = [0.0]

    def send(_payload: dict[str, object], _timeout: float) -> Outcome:
        gevent.sleep(0.1)
        step[0] = -30.0  # the wall clock jumps back 30 s while the first request is in flight
        return Outcome(status=200)

    monkeypatch.setattr(time, "time", lambda: real_time() + step[0])
    OpenLoopFirer(plan, send, PartWriter(tmp_path, 0)).run(time.time() + 0.05)
    parts = read_parts(list_parts(tmp_path)).sort_values("row")
    service = (parts["done_s"] - parts["sent_s"]).to_numpy()
    np.testing.assert_allclose(service, 0.1, atol=0.05)
    np.testing.assert_allclose(parts["sent_s"] - parts["intended_s"], 0.0, atol=0.05)


def test_the_trap_tells_a_request_sent_to_it_as_a_proxy_from_a_stray_connection() -> None:
    with connection_trap() as (trap_port, trapped):
        with httpx.Client(proxy=f"http://127.0.0.1:{trap_port}", timeout=2.0) as client:  # a proxied request
            with pytest.raises(httpx.HTTPError):
                client.get("http://127.0.0.1:9/v1/translate")  # never reached: the trap answers nothing
        with httpx.Client(timeout=2.0) as client:  # a stray request made to the trap's port itself
            with pytest.raises(httpx.HTTPError):
                client.get(f"http://127.0.0.1:{trap_port}/healthz")
        deadline = time.monotonic() + 5.0
        while len(trapped) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(trapped) == 2 and proxied(trapped) == [b"GET http://127.0.0.1:9/v1/translate HTTP/1.1"], trapped
