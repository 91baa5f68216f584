"""FaultTransport and FaultSpec: partitions, latency, injected errors, TTL healing."""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest
from pydantic import ValidationError

from rushhour.reference_server.gateway.faults import DEFAULT_TTL_S, FaultSpec, FaultTransport


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Node:
    """The inner transport: answers 200 and counts the requests that reached it."""

    def __init__(self) -> None:
        self.calls = 0
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        return httpx.Response(200, json={"ok": True})


def _proxy(clock: FakeClock | None = None, *, timeout_s: float = 0.01) -> tuple[FaultTransport, Node]:
    node = Node()
    proxy = FaultTransport(node.transport, connect_timeout_s=timeout_s, clock=clock or FakeClock(), rng=random.Random(7))
    return proxy, node


def _send(proxy: FaultTransport, n: int = 1) -> list[httpx.Response | BaseException]:
    async def main() -> list[httpx.Response | BaseException]:
        async with httpx.AsyncClient(transport=proxy, base_url="http://node") as client:
            return await asyncio.gather(*(client.post("/infer", json={}) for _ in range(n)), return_exceptions=True)

    return asyncio.run(main())


def test_fault_transport_passes_through_without_faults() -> None:
    proxy, node = _proxy()
    [response] = _send(proxy)
    assert isinstance(response, httpx.Response) and response.status_code == 200
    assert node.calls == 1
    assert proxy.active() == []


def test_fault_transport_blackhole_times_out_without_reaching_the_node() -> None:
    proxy, node = _proxy()
    proxy.inject(FaultSpec(kind="partition", mode="blackhole"))
    [result] = _send(proxy)
    assert isinstance(result, httpx.ConnectTimeout)
    assert node.calls == 0


def test_fault_transport_reset_refuses_the_connection() -> None:
    proxy, node = _proxy(timeout_s=60.0)  # a reset must not wait out the connect timeout
    proxy.inject(FaultSpec(kind="reset"))
    [result] = _send(proxy)
    assert isinstance(result, httpx.ConnectError) and not isinstance(result, httpx.ConnectTimeout)
    assert node.calls == 0
    [active] = proxy.active()
    assert (active["kind"], active["mode"]) == ("partition", "reset")


def test_fault_transport_partition_with_reset_mode_refuses_the_connection() -> None:
    proxy, node = _proxy(timeout_s=60.0)
    proxy.inject(FaultSpec(kind="partition", mode="reset"))
    [result] = _send(proxy)
    assert isinstance(result, httpx.ConnectError) and not isinstance(result, httpx.ConnectTimeout)
    assert node.calls == 0


def test_fault_transport_latency_still_reaches_the_node() -> None:
    proxy, node = _proxy()
    proxy.inject(FaultSpec(kind="latency", latency_ms=1, jitter_ms=1))
    responses = _send(proxy, n=3)
    assert all(isinstance(r, httpx.Response) and r.status_code == 200 for r in responses)
    assert node.calls == 3
    [active] = proxy.active()
    assert (active["kind"], active["latency_ms"], active["jitter_ms"]) == ("latency", 1.0, 1.0)


def test_fault_transport_latency_sleeps_before_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy, node = _proxy()
    proxy.inject(FaultSpec(kind="latency", latency_ms=250))
    slept: list[tuple[float, int]] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay: float) -> None:
        slept.append((delay, node.calls))
        await real_sleep(0)

    monkeypatch.setattr("rushhour.reference_server.gateway.faults.asyncio.sleep", fake_sleep)
    [response] = _send(proxy)
    assert isinstance(response, httpx.Response) and response.status_code == 200
    assert slept == [(0.25, 0)]  # slept 250 ms, before the node saw the request
    assert node.calls == 1


def test_fault_transport_error_rate_one_answers_500_without_the_node() -> None:
    proxy, node = _proxy()
    proxy.inject(FaultSpec(kind="errors", error_rate=1.0))
    responses = _send(proxy, n=5)
    assert all(isinstance(r, httpx.Response) and r.status_code == 500 for r in responses)
    assert responses[0].json()["error"]["code"] == "injected_error"  # type: ignore[union-attr]
    assert node.calls == 0


def test_fault_transport_error_rate_zero_passes_through() -> None:
    proxy, node = _proxy()
    proxy.inject(FaultSpec(kind="errors", error_rate=0.0))
    responses = _send(proxy, n=5)
    assert all(isinstance(r, httpx.Response) and r.status_code == 200 for r in responses)
    assert node.calls == 5


def test_fault_transport_partial_error_rate_fails_a_share() -> None:
    proxy, node = _proxy()
    proxy.inject(FaultSpec(kind="errors", error_rate=0.5))
    responses = _send(proxy, n=40)
    failed = sum(1 for r in responses if isinstance(r, httpx.Response) and r.status_code == 500)
    assert 0 < failed < 40
    assert node.calls == 40 - failed


def test_fault_transport_fault_heals_itself_after_its_ttl() -> None:
    clock = FakeClock()
    proxy, node = _proxy(clock)
    proxy.inject(FaultSpec(kind="reset", ttl_s=30))
    clock.now = 10.0
    assert proxy.active()[0]["expires_in_s"] == 20.0
    assert isinstance(_send(proxy)[0], httpx.ConnectError)
    clock.now = 30.0
    assert proxy.active() == []
    [response] = _send(proxy)
    assert isinstance(response, httpx.Response) and response.status_code == 200
    assert node.calls == 1


def test_fault_transport_reinjecting_a_kind_replaces_it_and_its_ttl() -> None:
    clock = FakeClock()
    proxy, _ = _proxy(clock)
    proxy.inject(FaultSpec(kind="partition", ttl_s=10))
    clock.now = 5.0
    proxy.inject(FaultSpec(kind="reset", ttl_s=100))
    [active] = proxy.active()
    assert (active["mode"], active["expires_in_s"]) == ("reset", 100.0)


def test_fault_transport_heal_clears_every_fault() -> None:
    proxy, node = _proxy()
    proxy.inject(FaultSpec(kind="latency", latency_ms=1))
    proxy.inject(FaultSpec(kind="errors"))
    assert len(proxy.active()) == 2
    proxy.heal()
    assert proxy.active() == []
    [response] = _send(proxy)
    assert isinstance(response, httpx.Response) and response.status_code == 200
    assert node.calls == 1


def test_fault_spec_defaults() -> None:
    spec = FaultSpec(kind="partition")
    assert (spec.mode, spec.error_rate, spec.ttl_s) == ("blackhole", 1.0, DEFAULT_TTL_S)


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "meteor"},
        {"kind": "latency"},
        {"kind": "latency", "latency_ms": 0},
        {"kind": "latency", "latency_ms": -5},
        {"kind": "latency", "latency_ms": 10, "jitter_ms": -1},
        {"kind": "errors", "error_rate": -0.1},
        {"kind": "errors", "error_rate": 1.5},
        {"kind": "partition", "ttl_s": 0},
        {"kind": "partition", "ttl_s": -1},
        {"kind": "partition", "mode": "drop"},
        {"kind": "partition", "colour": "red"},
    ],
)
def test_fault_spec_rejects_invalid_bodies(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        FaultSpec.model_validate(body)
