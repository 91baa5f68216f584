"""Routes at module level: the gateway and the node assemble module-level routers whose routes
reach their parts through dependencies; driven in process, without starting any node."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.applications import Starlette
from starlette.routing import Route

from rushhour.reference_server.config import ServerConfig
from rushhour.reference_server.gateway import admin, chat, jobs_api, public
from rushhour.reference_server.gateway.app import create_app
from rushhour.reference_server.gateway.components import Gateway
from rushhour.reference_server.gateway.deps import get_gateway
from rushhour.reference_server.gateway.events import EventLog
from rushhour.reference_server.node import app as node_app
from rushhour.reference_server.node.model_worker import ModelWorker, NodeSettings

TOKEN = "route-test-token"
SCHEDULED = {
    "pools": {
        "quality": {"model": "quality", "nodes": 1, "autoscale": {
            "min_nodes": 1, "max_nodes": 3, "schedule": [{"at_s": 60, "nodes": 2}, {"at_clock": "10:00", "nodes": 3}]}},
    },
}


def _request(app: Starlette, method: str, url: str, **kwargs: Any) -> httpx.Response:
    async def send() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
            return await client.request(method, url, **kwargs)

    return asyncio.run(send())


def _admin(app: FastAPI, path: str, body: object, token: str = TOKEN) -> httpx.Response:
    return _request(app, "POST", path, json=body, headers={"Authorization": f"Bearer {token}"})


def _paths(router: Any) -> set[str]:
    """Route paths as OpenAPI writes them: `{job_id:path}` is `{job_id}`."""
    return {re.sub(r":\w+}", "}", route.path) for route in router.routes if isinstance(route, APIRoute)}


def _served(app: FastAPI) -> set[str]:
    return set(app.openapi()["paths"])


@pytest.fixture
def app() -> FastAPI:
    return create_app(ServerConfig.model_validate(SCHEDULED), admin_token=TOKEN)


@pytest.mark.slow
def test_routes_gateway_serves_exactly_the_module_routers(app: FastAPI) -> None:
    served = _served(app)
    assert served == _paths(public.router) | _paths(jobs_api.router) | _paths(chat.router) | _paths(admin.router)
    assert {"/v1/translate", "/v1/events", "/metrics", "/v1/jobs", "/admin/reset", "/admin/autoscale/epoch"} <= served


def test_routes_gateway_keeps_only_its_parts_on_app_state(app: FastAPI) -> None:
    assert set(vars(app.state)["_state"]) == {"gateway"}
    assert isinstance(app.state.gateway, Gateway)
    assert TOKEN not in repr(app.state.gateway)


def test_routes_admin_token_is_a_dependency_of_every_admin_route(app: FastAPI) -> None:
    assert _admin(app, "/admin/cache/flush", None, token="").status_code == 401
    assert _admin(app, "/admin/cache/flush", None, token="wrong").json()["error"]["code"] == "unauthorized"
    assert _admin(app, "/admin/cache/flush", None).json() == {"flushed": 0}



def test_routes_cache_restore_returns_to_what_was_saved(app: FastAPI) -> None:
    cache = app.state.gateway.service.cache
    refused = _admin(app, "/admin/cache/restore", None)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "nothing_saved"
    cache.put(("kept", "en", "de", "fast"), "K", "fast")
    assert _admin(app, "/admin/cache/save", None).json() == {"saved": 1}
    cache.put(("later", "en", "de", "fast"), "L", "fast")
    assert _admin(app, "/admin/cache/restore", None).json() == {"restored": 1}
    assert cache.get(("later", "en", "de", "fast")) is None and cache.get(("kept", "en", "de", "fast")) is not None
    assert _admin(app, "/admin/cache/restore", None, token="wrong").status_code == 401

def test_routes_a_test_can_override_the_gateway_dependency(app: FastAPI) -> None:
    other = create_app(ServerConfig(), admin_token="other").state.gateway
    other.events.record({"type": "marker"})
    app.dependency_overrides[get_gateway] = lambda: other
    events = _request(app, "GET", "/v1/events").json()["events"]
    assert [e["type"] for e in events] == ["marker"]


def test_routes_events_are_numbered_whoever_records_them() -> None:
    log = EventLog(keep=3, wall=lambda: 12.5)
    log.record({"type": "fault_injected", "seq": "spoofed", "wall": 0})
    for kind in ("breaker", "scale", "node_ready"):
        log.record({"type": kind})
    assert [(e["seq"], e["type"], e["wall"]) for e in log.after(0)] == [(2, "breaker", 12.5), (3, "scale", 12.5), (4, "node_ready", 12.5)]
    assert [e["seq"] for e in log.after(3)] == [4]
    assert len(log.after(0, limit=-5)) == 1


@pytest.mark.parametrize("epoch", [1e20, 4_102_444_801, 0, -1, "soon"])
def test_routes_epoch_out_of_range_is_422_and_changes_nothing(app: FastAPI, epoch: object) -> None:
    autoscaler = app.state.gateway.autoscaler
    before = (autoscaler.started, [list(s.steps) for s in autoscaler.pools.values()])
    response = _admin(app, "/admin/autoscale/epoch", {"epoch": epoch})
    assert response.status_code == 422, response.text
    assert '"epoch"' in response.json()["error"]["message"]
    assert (autoscaler.started, [list(s.steps) for s in autoscaler.pools.values()]) == before


@pytest.mark.parametrize("literal", [b"Infinity", b"NaN", b"1e400"])
def test_routes_epoch_that_is_not_finite_is_422(app: FastAPI, literal: bytes) -> None:
    response = _request(
        app, "POST", "/admin/autoscale/epoch", content=b'{"epoch": ' + literal + b"}",
        headers={"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
    )
    assert response.status_code == 422, response.text


def test_routes_epoch_in_range_moves_the_schedule(app: FastAPI) -> None:
    autoscaler = app.state.gateway.autoscaler
    before = autoscaler.started
    response = _admin(app, "/admin/autoscale/epoch", {"epoch": 1_700_000_000})
    assert response.status_code == 200 and response.json() == {"epoch": 1_700_000_000.0}
    assert autoscaler.started != before


def test_routes_node_app_serves_its_module_router() -> None:
    worker = ModelWorker(NodeSettings(node_id="fast-0", pool="fast", tier="fast", warmup_lengths=[]))
    app = node_app.create_node_app(worker)
    served = {route.path for route in app.routes if isinstance(route, Route)}
    routed = {route.path for route in node_app.router.routes if isinstance(route, Route)}
    assert served == routed == {"/infer", "/health", "/healthz", "/readyz"}
    health = _request(app, "GET", "/health").json()
    assert health["id"] == "fast-0" and health["queue_depth"] == 0
    refused = _request(app, "POST", "/infer", json={"text": "hi"})
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "not_ready"


def test_the_gateway_serves_no_page_that_loads_scripts_from_elsewhere() -> None:
    """FastAPI's /docs and /redoc pull their scripts and styles from a CDN; the schema itself is served."""
    app = create_app(ServerConfig(), admin_token=TOKEN)
    for page in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        answer = _request(app, "GET", page)
        assert answer.status_code == 404 and "cdn" not in answer.text.lower(), page
    assert "/v1/translate" in _request(app, "GET", "/openapi.json").json()["paths"]
