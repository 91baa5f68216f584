"""A node takes its speed only from its gateway and reads no body over its limit: a stranger who reaches a
node's port cannot slow it (or cancel a slowdown), nor make it buffer a huge body; the nodes a gateway starts
get its token, and neither the admin token nor the cluster secret."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from rushhour.reference_server.config import PoolConfig
from rushhour.reference_server.gateway import nodes
from rushhour.reference_server.gateway.faults import FaultSpec, FaultTransport
from rushhour.reference_server.node.app import create_node_app
from rushhour.reference_server.node.model_worker import ModelWorker, NodeSettings
from rushhour.reference_server.node.protocol import (
    MAX_BODY_BYTES,
    NODE_TOKEN_ENV,
    NODE_TOKEN_HEADER,
    SLOWDOWN_HEADER,
)
from tests.reference_server.test_slowdown import BODY, FixedCostModel

TOKEN = "the-gateways-node-token-0123"


def _worker() -> ModelWorker:
    settings = NodeSettings(node_id="quality-0", pool="quality", tier="quality", max_batch_size=1,
                            max_queue_delay_ms=0.0, warmup_lengths=[])
    return ModelWorker(settings, model=FixedCostModel())


async def _calls(transport_for: Any, calls: list[dict[str, Any]]) -> tuple[ModelWorker, list[httpx.Response]]:
    worker = _worker()
    app = create_node_app(worker, token=TOKEN)
    async with app.router.lifespan_context(app):
        while worker.state != "ready":
            await asyncio.sleep(0.005)
        answers = []
        async with httpx.AsyncClient(transport=transport_for(app), base_url="http://node") as client:
            for call in calls:
                answers.append(await client.post("/infer", **call))
                call["slowdown"] = worker.slowdown
    return worker, answers


def test_a_strangers_slowdown_header_changes_nothing_the_gateways_does() -> None:
    calls: list[dict[str, Any]] = [
        {"json": BODY, "headers": {SLOWDOWN_HEADER: "20"}},  # a stranger, no token
        {"json": BODY, "headers": {SLOWDOWN_HEADER: "20", NODE_TOKEN_HEADER: "guessed"}},
        {"json": BODY, "headers": {SLOWDOWN_HEADER: "3", NODE_TOKEN_HEADER: TOKEN}},  # the gateway
        {"json": BODY},  # a stranger trying to cancel the fault
    ]
    _, answers = asyncio.run(_calls(httpx.ASGITransport, calls))
    assert all(a.status_code == 200 for a in answers)
    assert [call["slowdown"] for call in calls] == [1.0, 1.0, 3.0, 3.0]


def test_the_fault_proxy_carries_the_gateways_token_so_its_slowdown_is_paid() -> None:
    def through_proxy(app: Any) -> FaultTransport:
        proxy = FaultTransport(httpx.ASGITransport(app=app), connect_timeout_s=0.01, token=TOKEN)
        proxy.inject(FaultSpec(kind="slowdown", factor=2))
        return proxy

    calls: list[dict[str, Any]] = [{"json": BODY}]
    asyncio.run(_calls(through_proxy, calls))
    assert calls[0]["slowdown"] == 2.0


def test_a_body_over_the_limit_is_refused_with_413_declared_or_chunked() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b"x" * 65536

    calls: list[dict[str, Any]] = [{"content": b"x" * (MAX_BODY_BYTES + 1)}, {"content": chunks()}]
    _, answers = asyncio.run(_calls(httpx.ASGITransport, calls))
    assert [a.status_code for a in answers] == [413, 413]


def test_a_node_the_gateway_starts_gets_its_token_and_none_of_rushhours_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    seen: dict[str, Any] = {}

    class Popen:
        def __init__(self, command: list[str], **kwargs: Any) -> None:
            seen.update(kwargs)

    monkeypatch.setenv("RUSHHOUR_ADMIN_TOKEN", "admin-token-value")
    monkeypatch.setenv("RUSHHOUR_CLUSTER_SECRET", "cluster-secret-0123456789")
    monkeypatch.setenv(NODE_TOKEN_ENV, TOKEN)
    monkeypatch.setattr(nodes.subprocess, "Popen", Popen)
    handle: Any = SimpleNamespace(id="quality-0", pool="quality")  # what spawn_process reads of a node
    nodes.spawn_process(handle, PoolConfig(model="quality"), warm=True, model_cache_dir=None)
    env = seen["env"]
    assert env[NODE_TOKEN_ENV] == TOKEN and "PATH" in env
    assert "RUSHHOUR_ADMIN_TOKEN" not in env and "RUSHHOUR_CLUSTER_SECRET" not in env
