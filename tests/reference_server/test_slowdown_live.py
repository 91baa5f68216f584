"""The slowdown fault through a running server's admin API: validated, applied, healed three ways."""

from __future__ import annotations

import itertools
import statistics
import time
from typing import Any

import pytest

from tests.support.server import RunningServer, module_server, reset_after_each

# Dynamic batching: one compute call per batch, so the factor shows in infer_ms; continuous batching
# sleeps per step (tests/reference_server/test_continuous_live.py checks the fault there).
ONE_QUALITY_NODE = {"pools": {"quality": {"nodes": 1, "batching": "dynamic"}, "fast": {"nodes": 1}}}
TEXT = "The spring promotion starts at noon and every order ships free within the country. "
ROUNDS = 11  # one request a measurement: beside a busy suite single ratios ran from 0.75 to 4.3, so the median needs more
TTL_S = 2.0
_TEXTS = itertools.count()
# Compute times judged as ratios of wall-clock medians: in a CPU lane, not beside six workers.
pytestmark = pytest.mark.xdist_group("cpu-b")


def _infer_ms(server: RunningServer) -> float:
    """Node compute time of one quality request whose text no other call sent (no cache hit)."""
    response = server.translate(f"probe {next(_TEXTS)}. " + TEXT * 3, mode="quality")
    assert response.status_code == 200, response.text
    assert response.json()["node"] == "quality-0"
    return float(response.json()["timing"]["infer_ms"])


def _faults(server: RunningServer) -> list[dict[str, Any]]:
    [node] = [n for n in server.status()["nodes"] if n["id"] == "quality-0"]
    return list(node["faults"])


def _no_faults(server: RunningServer) -> None:
    assert _faults(server) == []


# One server for the module: every test leaves quality-0 without faults (checked).
server = module_server("slowdown", ONE_QUALITY_NODE)
healed = reset_after_each(check=_no_faults)


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
    """Each round measures the node without the fault, with it, and after its heal, one request
    apart: the ratios compare neighbours in time, so a machine whose load changes between rounds
    (other tests beside this one) moves all three together instead of faking or hiding the factor."""
    for _ in range(3):
        _infer_ms(server)  # warm
    slowed, healed = [], []
    for _ in range(ROUNDS):
        base = _infer_ms(server)
        response = server.admin("POST", "/admin/nodes/quality-0/faults", {"kind": "slowdown", "factor": 2, "ttl_s": 60})
        assert response.status_code == 200, response.text
        assert [(f["kind"], f["factor"]) for f in _faults(server)] == [("slowdown", 2.0)]
        slowed.append(_infer_ms(server) / base)
        assert server.admin("DELETE", "/admin/nodes/quality-0/faults").status_code == 200
        assert _faults(server) == []
        healed.append(_infer_ms(server) / base)
    assert 1.5 < statistics.median(slowed) < 3.0, slowed
    assert statistics.median(healed) < 1.5, healed


@pytest.mark.slow
def test_slowdown_live_heals_on_reset_and_at_its_ttl(server: RunningServer) -> None:
    server.admin("POST", "/admin/nodes/quality-0/faults", {"kind": "slowdown", "factor": 3})
    assert server.admin("POST", "/admin/reset").status_code == 200
    assert _faults(server) == []
    injected = time.monotonic()
    server.admin("POST", "/admin/nodes/quality-0/faults", {"kind": "slowdown", "factor": 3, "ttl_s": TTL_S})
    assert len(_faults(server)) == 1  # a status call takes milliseconds: well inside the TTL, even on a busy machine
    server.wait_for(lambda s: not any(n["faults"] for n in s["nodes"] if n["id"] == "quality-0"), timeout_s=TTL_S + 10)
    assert time.monotonic() - injected >= TTL_S  # healed by its TTL, not before
