"""The direct sender records what Locust's session would: answers, 3xx as the answer, stamped
connections, and the session's error names. Ground truth: a loopback server that logs each request."""

from __future__ import annotations

import errno
import socket
from types import SimpleNamespace

import gevent
import pytest

from rushhour.kernel.processes import free_port
from rushhour.scenarios.generator import handoff
from rushhour.scenarios.generator.direct import DirectSender, error_name
from rushhour.scenarios.protocols.base import make_protocol
from tests.scenarios.generator.truth import Fate, truth_server

ELSEWHERE = "http://[2001:db8::1]:9/v1/translate"  # a documentation address: never reachable, never contacted


def _sender(host: str, *, auth_header: str | None = None) -> DirectSender:
    pool = handoff.StampedClientPool(concurrency=4, network_timeout=5.0, connection_timeout=2.0)
    session = SimpleNamespace(client=SimpleNamespace(clientpool=pool), base_url=host, auth_header=auth_header)
    return DirectSender(session, make_protocol({}))


def _fate(row: int) -> Fate:
    return [Fate(200), Fate(503), Fate(302, location=ELSEWHERE), Fate(0)][row]


def test_direct_sender_records_answers_errors_and_redirects_as_sent() -> None:
    with truth_server(_fate) as (host, ledger):
        send = _sender(host)
        outcomes, stamped = [], []
        for row in range(3):
            handoff.begin()
            outcomes.append(send({"text": "x", "tenant": f"r{row}"}, 5.0))
            stamped.append(handoff.handed_at() is not None)
        seen = ledger.frame()
    assert [o.status for o in outcomes] == [200, 503, 302]
    assert outcomes[0].model == "fast" and outcomes[0].node == "fast-0" and not outcomes[0].error
    assert outcomes[1].error == "http_503"  # the error body's code, as the protocol reads it
    assert all(stamped) and sorted(seen["row"]) == [0, 1, 2]  # each sent once, nothing followed


def test_direct_sender_names_a_refused_connection_as_the_session_does() -> None:
    outcome = _sender(f"http://127.0.0.1:{free_port()}")({"text": "x", "tenant": "r0"}, 5.0)
    assert outcome.status == 0 and outcome.error == "ConnectionRefusedError"


def test_the_firers_own_time_out_passes_through_the_sender() -> None:
    with truth_server(_fate) as (host, ledger):
        timer = gevent.Timeout(0.3)
        with pytest.raises(gevent.Timeout) as caught, timer:
            _sender(host)({"text": "x", "tenant": "r3"}, 5.0)  # held by the server until the test ends
        assert caught.value is timer
        assert len(ledger.frame()) == 1


def test_error_name_follows_the_user_agents_retry_rules() -> None:
    assert error_name(TimeoutError("timed out")) == "RetriesExceeded"
    assert error_name(OSError(errno.EPIPE, "broken pipe")) == "RetriesExceeded"
    assert error_name(ConnectionResetError(errno.ECONNRESET, "reset")) == "ConnectionResetError"
    assert error_name(socket.gaierror(-2, "unknown host")) == "gaierror"
    assert error_name(ValueError("a bug")) is None
