"""Held faults and held-down kills end by themselves unless their lease is renewed: the fault
proxy's `renew`, the supervisor's `renew_down`, and the admin API's lease endpoint."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from rushhour.reference_server.gateway.admin import KillBody, LeaseBody
from rushhour.reference_server.gateway.faults import FaultSpec
from tests.reference_server.test_faults import FakeClock, _proxy
from tests.reference_server.test_kill_hold import Spawner, _close, _cluster, _supervise_for, spawner  # noqa: F401


def test_fault_renewal_pushes_the_end_of_every_active_fault() -> None:
    clock = FakeClock()
    proxy, _ = _proxy(clock)
    proxy.inject(FaultSpec(kind="partition", ttl_s=20))
    proxy.inject(FaultSpec(kind="latency", latency_ms=5, ttl_s=20))
    for _ in range(10):  # renewed every 5 s for 50 s: still on
        clock.now += 5.0
        assert proxy.renew(20.0) == 2
    assert {f["kind"] for f in proxy.active()} == {"partition", "latency"}
    clock.now += 20.0  # the renewals stop: gone one lease later
    assert proxy.active() == [] and proxy.renew(20.0) == 0


def test_fault_renewal_after_a_heal_renews_nothing() -> None:
    proxy, _ = _proxy(FakeClock())
    proxy.inject(FaultSpec(kind="errors", ttl_s=20))
    proxy.heal()
    assert proxy.renew(20.0) == 0


def test_kill_held_down_comes_back_when_its_lease_is_not_renewed(spawner: Spawner) -> None:  # noqa: F811
    async def scenario() -> tuple[str, bool, str, bool]:
        cluster = _cluster(spawner)
        await cluster.scale("quality", 1)
        await cluster.kill("quality-0", restart=False, ttl_s=0.3)
        for _ in range(4):  # renewed: stays down past its first lease
            await _supervise_for(cluster, 0.15)
            assert cluster.renew_down("quality-0", 0.3)
        held = cluster.node("quality-0").state
        await _supervise_for(cluster, 0.6)  # not renewed: back by itself
        back = cluster.node("quality-0").state
        renewed_after = cluster.renew_down("quality-0", 0.3)
        alive = spawner.started[-1].poll() is None
        await _close(cluster)
        return held, renewed_after, back, alive

    held, renewed_after, back, alive = asyncio.run(scenario())
    assert held == "down" and back != "down" and alive
    assert renewed_after is False, "a node that came back is not held any more"


def test_kill_and_lease_bodies_bound_their_ttls() -> None:
    assert KillBody.model_validate({"restart": False, "ttl_s": 20}).ttl_s == 20
    for bad in (0, -1, 86_401, float("inf")):
        with pytest.raises(ValidationError):
            LeaseBody.model_validate({"ttl_s": bad})
    with pytest.raises(ValidationError):
        LeaseBody.model_validate({})


def test_the_lease_endpoint_and_the_kill_ttl_are_in_the_openapi_document() -> None:
    from rushhour.reference_server.config import ServerConfig
    from rushhour.reference_server.gateway.app import create_app

    schema = create_app(ServerConfig(), admin_token="t").openapi()
    lease = schema["paths"]["/admin/nodes/{node_id}/lease"]["post"]
    assert "Renew the lease" in lease["description"] and "held: false" in lease["description"]
    bodies = schema["components"]["schemas"]
    assert "ttl_s" in bodies["LeaseBody"]["required"]
    assert "renewed with POST /admin/nodes/{id}/lease" in bodies["KillBody"]["properties"]["ttl_s"]["description"]


def test_a_renewal_needs_the_admin_token_and_a_known_node() -> None:
    from rushhour.reference_server.config import ServerConfig
    from rushhour.reference_server.gateway.app import create_app
    from tests.reference_server.test_routes import _request

    app = create_app(ServerConfig(), admin_token="t")
    headers = {"Authorization": "Bearer t"}
    missing = _request(app, "POST", "/admin/nodes/nope-9/lease", json={"ttl_s": 20}, headers=headers)
    assert missing.status_code == 404
    assert _request(app, "POST", "/admin/nodes/quality-0/lease", json={"ttl_s": 20}).status_code == 401
