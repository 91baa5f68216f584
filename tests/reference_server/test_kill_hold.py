"""A node killed with `restart: false` stays down (an N-1 capacity test holds it), until an admin
restart brings it back; a plain kill is still restarted by the supervisor after its backoff."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from rushhour.reference_server.gateway.admin import KillBody
from rushhour.reference_server.gateway.cluster import Cluster
from tests.support.spawners import ScriptSpawner as Spawner
from tests.support.spawners import close_cluster as _close
from tests.support.spawners import quality_cluster


@pytest.fixture
def spawner() -> Iterator[Spawner]:
    fake = Spawner()
    yield fake
    fake.stop_all()


def _cluster(spawner: Spawner) -> Cluster:
    return quality_cluster(spawner, restart_backoff_s=0.05)


async def _supervise_for(cluster: Cluster, seconds: float) -> None:
    """What the supervisor loop does, for a while: check every node."""
    for _ in range(int(seconds / 0.05)):
        for node in list(cluster.nodes.values()):
            await cluster._check(node)
        await asyncio.sleep(0.05)


@pytest.mark.slow
def test_kill_hold_without_restart_stays_down_until_an_admin_restart(spawner: Spawner) -> None:
    async def scenario() -> tuple[str, str, int]:
        cluster = _cluster(spawner)
        await cluster.scale("quality", 2)
        await cluster.kill("quality-0", restart=False)
        await _supervise_for(cluster, 0.5)
        held = cluster.node("quality-0").state
        await cluster.kill("quality-0", restart=False)  # killing a held node again keeps it held
        await _supervise_for(cluster, 0.3)
        again = cluster.node("quality-0").state
        await cluster.restart("quality-0", warm=True)
        alive = sum(1 for p in spawner.started if p.poll() is None)
        await _close(cluster)
        return held, again, alive

    held, again, alive = asyncio.run(scenario())
    assert held == "down" and again == "down"
    assert alive == 2


@pytest.mark.slow
def test_kill_hold_plain_kill_is_restarted_after_the_backoff(spawner: Spawner) -> None:
    async def scenario() -> tuple[str, int]:
        cluster = _cluster(spawner)
        await cluster.scale("quality", 1)
        await cluster.kill("quality-0")
        await _supervise_for(cluster, 0.5)
        state = cluster.node("quality-0").state
        await _close(cluster)
        return state, len(spawner.started)

    state, started = asyncio.run(scenario())
    assert state != "down" and started == 2


def test_kill_hold_body_defaults_to_restart_and_rejects_unknown_fields() -> None:
    assert KillBody().restart is True
    assert KillBody.model_validate({"restart": False}).restart is False
    with pytest.raises(ValidationError):
        KillBody.model_validate({"restrat": False})
