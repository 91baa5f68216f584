"""The slowdown fault through a running server's admin API: validated, applied, healed three ways."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.server import RunningServer

# Dynamic batching: one compute call per batch, so the factor shows in infer_ms; continuous batching
# sleeps per step (tests/reference_server/test_continuous_live.py checks the fault there).
ONE_QUALITY_NODE = {"pools": {"quality": {"nodes": 1, "batching": "dynamic"}, "fast": {"nodes": 1}}}
TEXT = "The spring promotion starts at noon and every order ships free within the country. "


def _median_infer_ms(server: RunningServer, tag: str, count: int = 5) -> float:
    """Median node compute time of `count` distinct quality requests (distinct: no cache hits)."""
    times = []
    for i in range(count):
        response = server.translate(f"{tag} {i}. " + TEXT * 3, mode="quality")
        assert response.status_code == 200, response.text
        assert response.json()["node"] == "quality-0"
        times.append(float(response.json()["timing"]["infer_ms"]))
    return statistics.median(times)


def _faults(server: RunningServer) -> list[dict[str, Any]]:
    [node] = [n for n in server.status()["nodes"] if n["id"] == "quality-0"]
    return list(node["faults"])


@pytest.fixture
def server(server_factory: Callable[..., RunningServer]) -> RunningServer:
    return server_factory(ONE_QUALITY_NODE)


@pytest.mark.slow
def test_slowdown_live_rejects_bad_factors_with_422(server: RunningServer) -> None:
    for body in ({"kind": "slowdown", "factor": 0.5}, {"kind": "slowdown", "factor": 21}, {"kind": "slowdown"}):
        response = server.admin("POST", "/admin/nodes/quality-0/faults", body)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "invalid_field"
    assert "21" in server.admin("POST", "/admin/nodes/quality-0/faults", {"kind": "slowdown", "factor": 21}).text
    assert _faults(server) == []


@pytest.mark.slow
def test_slowdown_live_doubles_node_compute_and_heals(server: RunningServer) -> None:
    _median_infer_ms(server, "warm", count=3)
    base = _median_infer_ms(server, "before")
    response = server.admin("POST", "/admin/nodes/quality-0/faults", {"kind": "slowdown", "factor": 2, "ttl_s": 60})
    assert response.status_code == 200, response.text
    assert [(f["kind"], f["factor"]) for f in _faults(server)] == [("slowdown", 2.0)]
    slowed = _median_infer_ms(server, "during")
    assert 1.5 < slowed / base < 3.0, (base, slowed)
    assert server.admin("DELETE", "/admin/nodes/quality-0/faults").status_code == 200
    assert _faults(server) == []
    healed = _median_infer_ms(server, "after")
    assert healed / base < 1.5, (base, healed)


@pytest.mark.slow
def test_slowdown_live_heals_on_reset_and_at_its_ttl(server: RunningServer) -> None:
    server.admin("POST", "/admin/nodes/quality-0/faults", {"kind": "slowdown", "factor": 3})
    assert server.admin("POST", "/admin/reset").status_code == 200
    assert _faults(server) == []
    server.admin("POST", "/admin/nodes/quality-0/faults", {"kind": "slowdown", "factor": 3, "ttl_s": 0.5})
    assert len(_faults(server)) == 1
    time.sleep(0.6)
    assert _faults(server) == []
