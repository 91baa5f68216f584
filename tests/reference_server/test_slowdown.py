"""The slowdown fault: validated by the admin model, carried by the fault proxy, paid by the node.

A fake model with a known compute time (40 ms a batch) sits behind the real node app and the real
fault proxy, so the ratios below are about the fault, not about this machine's load.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rushhour.reference_server.gateway.faults import FaultSpec, FaultTransport
from rushhour.reference_server.model import ModelInput
from rushhour.reference_server.node import model_worker as worker_module
from rushhour.reference_server.node.app import create_node_app
from rushhour.reference_server.node.model_worker import ModelWorker, NodeSettings
from rushhour.reference_server.node.protocol import SLOWDOWN_HEADER, parse_slowdown

COMPUTE_S = 0.04
BODY = {"text": "hello", "source_lang": "en", "target_lang": "de"}


class FixedCostModel:
    """Every batch takes COMPUTE_S of "compute", whatever its size."""

    tier = "quality"
    provider = "FakeExecutionProvider"
    name = "fixed-cost"

    def translate_batch(self, inputs: Sequence[ModelInput]) -> list[str]:
        time.sleep(COMPUTE_S)
        return [item.text.upper() for item in inputs]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class HeaderRecorder:
    """The inner transport: records the slowdown header of every call that reaches the node."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request.headers.get(SLOWDOWN_HEADER))
        return httpx.Response(200, json={})


def _worker() -> ModelWorker:
    settings = NodeSettings(
        node_id="quality-0", pool="quality", tier="quality", max_batch_size=1, max_queue_delay_ms=0.0, warmup_lengths=[]
    )
    return ModelWorker(settings, model=FixedCostModel())


async def _serve(factor: float | None, count: int) -> tuple[list[float], float]:
    """One node (batch size 1) behind the fault proxy, `count` requests fired at once:
    every request's infer_ms and the wall time to answer them all."""
    worker = _worker()
    app = create_node_app(worker)
    proxy = FaultTransport(httpx.ASGITransport(app=app), connect_timeout_s=0.01)
    if factor is not None:
        proxy.inject(FaultSpec(kind="slowdown", factor=factor))
    async with app.router.lifespan_context(app):
        while worker.state != "ready":
            await asyncio.sleep(0.005)
        async with httpx.AsyncClient(transport=proxy, base_url="http://node") as client:
            started = time.perf_counter()
            responses = await asyncio.gather(*(client.post("/infer", json=BODY) for _ in range(count)))
            wall = time.perf_counter() - started
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    return [float(r.json()["infer_ms"]) for r in responses], wall


def _send(proxy: FaultTransport) -> None:
    async def main() -> None:
        async with httpx.AsyncClient(transport=proxy, base_url="http://node") as client:
            await client.post("/infer", json=BODY)

    asyncio.run(main())


# ---- the admin body ---------------------------------------------------------------------------
@pytest.mark.parametrize("factor", [0.5, 0.0, -2.0, 20.5, 1e9, float("nan"), float("inf")])
def test_slowdown_spec_rejects_a_factor_out_of_range_naming_it(factor: float) -> None:
    with pytest.raises(ValidationError) as info:
        FaultSpec.model_validate({"kind": "slowdown", "factor": factor})
    assert "between 1 and 20" in str(info.value) and repr(factor) in str(info.value)


def test_slowdown_spec_needs_a_factor() -> None:
    with pytest.raises(ValidationError, match="needs a factor"):
        FaultSpec.model_validate({"kind": "slowdown", "ttl_s": 5})


@settings(max_examples=200, deadline=None)
@given(factor=st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=8) | st.booleans() | st.none()
       | st.lists(st.integers(), max_size=2))
def test_slowdown_spec_any_factor_is_valid_in_range_or_a_validation_error(factor: object) -> None:
    try:
        spec = FaultSpec.model_validate({"kind": "slowdown", "factor": factor})
    except ValidationError:
        return
    assert spec.factor is not None and 1.0 <= spec.factor <= 20.0


def test_slowdown_spec_accepts_the_bounds() -> None:
    assert FaultSpec(kind="slowdown", factor=1).factor == 1.0
    assert FaultSpec(kind="slowdown", factor=20).factor == 20.0


# ---- the proxy --------------------------------------------------------------------------------
def test_slowdown_proxy_stamps_calls_until_it_heals_at_its_ttl() -> None:
    clock, node = FakeClock(), HeaderRecorder()
    proxy = FaultTransport(node.transport, connect_timeout_s=0.01, clock=clock)
    _send(proxy)
    proxy.inject(FaultSpec(kind="slowdown", factor=1.3, ttl_s=10))
    [active] = proxy.active()
    assert (active["kind"], active["factor"], active["expires_in_s"]) == ("slowdown", 1.3, 10.0)
    _send(proxy)
    clock.now = 10.0
    _send(proxy)
    assert node.seen == [None, "1.3", None]
    assert proxy.active() == []


def test_slowdown_proxy_heal_removes_the_factor() -> None:
    node = HeaderRecorder()
    proxy = FaultTransport(node.transport, connect_timeout_s=0.01)
    proxy.inject(FaultSpec(kind="slowdown", factor=2))
    _send(proxy)
    proxy.heal()
    _send(proxy)
    assert node.seen == ["2.0", None]


def test_slowdown_header_parsing_falls_back_to_full_speed() -> None:
    assert parse_slowdown(None) == 1.0
    assert parse_slowdown("2.5") == 2.5
    assert parse_slowdown("fast") == 1.0
    assert parse_slowdown("0.5") == 1.0
    assert parse_slowdown("nan") == 1.0


# ---- the node pays for it ---------------------------------------------------------------------
def test_slowdown_worker_sleeps_factor_minus_one_times_compute() -> None:
    worker = _worker()
    batch = [ModelInput("hi", "en", "de")]
    started = time.perf_counter()
    worker.run_batch(batch)
    base = time.perf_counter() - started
    worker.slow_down_from("3")
    started = time.perf_counter()
    worker.run_batch(batch)
    slowed = time.perf_counter() - started
    assert 2.5 < slowed / base < 4.0
    worker.slow_down_from(None)
    assert worker.slowdown == 1.0


@pytest.mark.slow
def test_slowdown_factor_two_doubles_infer_time_and_halves_throughput() -> None:
    """Measured side by side: seven rounds of an untouched node and a slowed one (in alternating
    order), judged on the median of the rounds' ratios, so a stall of the machine during a run
    moves one round and seven rounds leave room for three."""
    count = 10
    time_ratios, rate_ratios = [], []
    for round_ in range(7):
        first, second = (None, 2.0) if round_ % 2 == 0 else (2.0, None)
        runs = {first: asyncio.run(_serve(first, count)), second: asyncio.run(_serve(second, count))}
        (base_times, base_wall), (slow_times, slow_wall) = runs[None], runs[2.0]
        base_ms, slow_ms = statistics.median(base_times), statistics.median(slow_times)
        assert base_ms >= COMPUTE_S * 1000 * 0.9
        time_ratios.append(slow_ms / base_ms)
        rate_ratios.append((count / slow_wall) / (count / base_wall))
    assert 1.7 < statistics.median(time_ratios) < 2.6, time_ratios
    assert 0.38 < statistics.median(rate_ratios) < 0.6, rate_ratios  # capacity halves, not only latency


def test_slowdown_debt_of_decode_steps_is_slept_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(worker_module.time, "sleep", slept.append)
    worker = _worker()
    worker._pay_slowdown(0.002)
    worker._pay_slowdown(0.002)
    assert slept == []  # under a slice: owed, not slept
    worker._pay_slowdown(0.002)
    assert slept == [pytest.approx(0.006)]
    worker._pay_slowdown(0.0)  # full speed again: nothing stays owed
    worker._pay_slowdown(0.004)
    assert len(slept) == 1
