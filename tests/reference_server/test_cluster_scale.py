"""Cluster.scale under concurrency: serialised per pool, every process tracked or gone, and a
scale-down that never freezes the event loop. Node processes are small stand-ins that take a
chosen time to exit after SIGTERM, as a node finishing its last batch does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from rushhour.reference_server.gateway.cluster import Cluster
from tests.support.spawners import REFUSES, SLOW_EXIT, ScriptSpawner, close_cluster, quality_cluster


@pytest.fixture
def spawner() -> Iterator[ScriptSpawner]:
    fake = ScriptSpawner(SLOW_EXIT, "0.0")
    yield fake
    fake.stop_all()


def _tracked(cluster: Cluster) -> set[int]:
    return {n.pid for n in cluster.nodes.values() if n.pid is not None}


@pytest.mark.slow
def test_cluster_scale_concurrent_calls_are_serialised_and_track_every_process(spawner: ScriptSpawner) -> None:
    async def scenario() -> tuple[list[object] | tuple[object, ...], int, set[int], set[int]]:
        cluster = quality_cluster(spawner)
        await cluster.scale("quality", 3)
        for node in cluster.nodes.values():
            node.inflight = 1  # each drain waits until its in-flight request is answered

        async def answer_in_flight() -> None:
            await asyncio.sleep(0.3)
            for node in list(cluster.nodes.values()):
                node.inflight = 0

        answering = asyncio.create_task(answer_in_flight())
        first = asyncio.create_task(cluster.scale("quality", 0, reason="idle"))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(cluster.scale("quality", 1, reason="reset"))
        await asyncio.sleep(0.05)
        third = asyncio.create_task(cluster.scale("quality", 2, reason="admin"))
        results = await asyncio.gather(first, second, third, return_exceptions=True)
        await answering
        outcome = (results, len(cluster.pool_nodes("quality")), _tracked(cluster), spawner.alive())
        await close_cluster(cluster)
        return outcome

    results, size, tracked, alive = asyncio.run(scenario())
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert size == 2  # the last call asked for 2
    assert len(tracked) == 2 and alive == tracked  # no process left untracked


def test_cluster_restart_of_a_draining_node_starts_no_process(spawner: ScriptSpawner) -> None:
    async def scenario() -> tuple[int, set[int], set[int]]:
        cluster = quality_cluster(spawner)
        await cluster.scale("quality", 2)
        cluster.node("quality-1").inflight = 1
        draining = asyncio.create_task(cluster.scale("quality", 1))
        await asyncio.sleep(0.05)
        before = len(spawner.started)
        await cluster.restart("quality-1", warm=True)  # e.g. a reset that saw it down
        started = len(spawner.started) - before
        cluster.node("quality-1").inflight = 0
        await draining
        outcome = (started, _tracked(cluster), spawner.alive())
        await close_cluster(cluster)
        return outcome

    started, tracked, alive = asyncio.run(scenario())
    assert started == 0
    assert len(tracked) == 1 and alive == tracked


@pytest.mark.slow
def test_cluster_scale_down_keeps_serving_while_a_node_takes_its_time_to_exit() -> None:
    spawner = ScriptSpawner(SLOW_EXIT, "1.0")
    app = Starlette(routes=[Route("/ping", lambda request: PlainTextResponse("pong"))])

    async def scenario() -> tuple[float, float, float]:
        cluster = quality_cluster(spawner)
        await cluster.scale("quality", 2)
        await asyncio.sleep(0.5)  # the stand-ins have installed their SIGTERM handler
        started = time.monotonic()
        scaling = asyncio.create_task(cluster.scale("quality", 1))
        gaps: list[float] = []
        served_at = 0.0
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
            last = time.monotonic()
            while not scaling.done():
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now
                if not served_at and (await client.get("/ping")).text == "pong":
                    served_at = now - started
        await scaling
        took = time.monotonic() - started
        await close_cluster(cluster)
        return max(gaps), served_at, took

    try:
        worst_gap, served_at, took = asyncio.run(scenario())
    finally:
        spawner.stop_all()
    assert took >= 0.9  # the node really took its second to exit
    assert 0 < served_at < took  # a request was served during the scale-down
    assert worst_gap < 0.3, f"the event loop froze for {worst_gap:.2f} s"


def test_cluster_does_not_restart_a_node_that_refused_its_configuration() -> None:
    spawner = ScriptSpawner(REFUSES)

    async def scenario() -> tuple[str, object, int]:
        cluster = quality_cluster(spawner)
        await cluster.scale("quality", 1)
        node = next(iter(cluster.nodes.values()))
        assert node.proc is not None
        node.proc.wait(timeout=10)
        for _ in range(3):  # what the supervisor does on each tick, past any backoff
            cluster._handle_exit(node)
            node.restart_at = None if node.restart_at is None else 0.0
            await asyncio.sleep(0.05)
        state, restart_at, started = node.state, node.restart_at, len(spawner.started)
        await close_cluster(cluster)
        return state, restart_at, started

    try:
        state, restart_at, started = asyncio.run(scenario())
    finally:
        spawner.stop_all()
    assert state == "down" and restart_at is None and started == 1
