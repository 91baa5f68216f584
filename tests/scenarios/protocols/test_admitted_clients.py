"""The clients of an admitted target connect where the admission looked, whatever the name says later.

The attack (DNS rebinding): the name answers 127.0.0.1 while the admission guards it, then
192.0.2.1 (TEST-NET, where nothing answers) to every later lookup. The drill's status scraper and
the capacity job's sampler and `settle` get their clients from `admission.admitted_client`, so
they read the loopback stub by name and never ask the resolver again; a second lookup is counted,
and would send a connection to 192.0.2.1 that fails.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rushhour.kernel.pinning import forget_pins
from rushhour.scenarios.capacity.pool_status import StatusSampler, settle
from rushhour.scenarios.protocols.admission import Admitted, Context, Needs, admit
from rushhour.scenarios.run.scraper import StatusScraper
from rushhour.scenarios.spec.target import TargetProtocol
from tests.support.stub import Answer, stub_server

NAME = "rebind.test"
REBOUND = "192.0.2.1"
STATUS: Answer = (200, {}, {"ready": True, "pools": {"fast": {"nodes_alive": 1, "nodes_ready": 1, "queue_depth": 0,
                                                             "inflight": 0}}, "nodes": []})


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The resolver's answers for NAME: loopback first, REBOUND after; yields each answer given."""
    real = socket.getaddrinfo
    answers: list[str] = []

    def resolve(host: str, *args: Any, **kwargs: Any) -> Any:
        if host != NAME:
            return real(host, *args, **kwargs)
        answers.append("127.0.0.1" if not answers else REBOUND)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[-1], 0))]

    forget_pins()
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    try:
        yield answers
    finally:
        forget_pins()


def _admitted(port: int) -> str:
    url = f"http://{NAME}:{port}"
    assert isinstance(admit(url, Needs(TargetProtocol()), Context(probe=False)), Admitted)
    return url


def _until(done: Any, limit_s: float = 10.0) -> None:
    give_up = time.monotonic() + limit_s
    while not done() and time.monotonic() < give_up:
        time.sleep(0.05)


def test_a_rebinding_name_cannot_redirect_the_status_scraper(rebinding: list[str]) -> None:
    errors: list[dict] = []
    with stub_server({"/v1/status": STATUS, "/v1/events": (200, {}, {"events": []})}) as (base, asked):
        url = _admitted(int(base.rsplit(":", 1)[1]))
        scraper = StatusScraper(url, origin=0.0, interval_s=0.1, on_server_event=lambda e: None, on_error=errors.append)
        scraper.start()
        _until(lambda: scraper.samples >= 2)
        scraper.stop()
    assert scraper.samples >= 2 and errors == [] and "/v1/status" in asked
    assert rebinding == ["127.0.0.1"]


def test_a_rebinding_name_cannot_redirect_the_capacity_sampler_or_settle(rebinding: list[str]) -> None:
    with stub_server({"/v1/status": STATUS}) as (base, asked):
        url = _admitted(int(base.rsplit(":", 1)[1]))
        settle(url, limit_s=2.0)
        sampler = StatusSampler(url, origin=time.time(), interval_s=0.1).start()
        _until(lambda: sampler.samples >= 2)
        samples = sampler.stop()
    assert asked.count("/v1/status") >= 3 and set(samples["pool"]) == {"fast"}
    assert rebinding == ["127.0.0.1"]
