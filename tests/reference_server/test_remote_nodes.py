"""The gateway in remote-node mode: nodes started as separate processes with exactly
the command line of the fast pool's Kubernetes Deployment (on loopback ports), listed in the
gateway's config. A node killed by PID is routed around and marked down, and joins again when
started anew; a partition through the admin fault API is routed around and healed; kill,
restart and scale answer 409, since the nodes are not the gateway's."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rushhour.kernel.processes import stop_process
from rushhour.reference_server.launch import ServerProcess
from tests.support.manifests import loopback_node_argv
from tests.support.server import RunningServer, module_server, reset_after_each

POOL = "fast"


class NodeProcess(ServerProcess):
    """One `rushhour node` we started on a loopback port, started and awaited (`/readyz`) as the
    reference server is."""

    def __init__(self, workdir: Path, name: str) -> None:
        super().__init__(log_path=workdir / f"{name}.log")

    def argv(self) -> list[str]:
        return loopback_node_argv(POOL, self.port)

    def kill(self) -> None:
        stop_process(self.proc, grace_s=0, sig=signal.SIGKILL)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[NodeProcess]]:
    workdir = tmp_path_factory.mktemp("remote-nodes")
    started = [NodeProcess(workdir, f"node-{i}") for i in range(2)]
    try:
        for node in started:
            node.start(ready_wait_s=90.0)
        yield started
    finally:
        for node in started:
            node.stop(grace_s=5)


def _gateway_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The gateway lists the module's node processes (started first, stopped after it)."""
    nodes: list[NodeProcess] = request.getfixturevalue("nodes")
    return {"pools": {"quality": None, POOL: {"model": "fast", "remote": [n.url for n in nodes]}}}


def _all_ready(status: dict[str, Any]) -> bool:
    return status["ready"] and all(n["state"] == "ready" and n["breaker"] == "closed" for n in status["nodes"])


server = module_server("remote-gateway", _gateway_config)
healthy = reset_after_each(ready=_all_ready, timeout_s=30)


def _node(status: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in status["nodes"] if n["id"] == node_id)


def _served_by(server: RunningServer, count: int, tag: str) -> Counter[str]:
    """Send `count` distinct texts (no cache hits); every one must succeed."""
    served: Counter[str] = Counter()
    for i in range(count):
        response = server.translate(f"{tag} request number {i}", mode="fast", deadline_ms=5000)
        assert response.status_code == 200, response.text
        served[response.json()["node"]] += 1
    return served


@pytest.mark.slow
def test_remote_nodes_serve_and_are_listed(server: RunningServer, nodes: list[NodeProcess]) -> None:
    status = server.wait_for(_all_ready)
    assert {(n["id"], n["url"], n["pid"]) for n in status["nodes"]} == {
        ("fast-0", nodes[0].url, None), ("fast-1", nodes[1].url, None)}
    assert set(_served_by(server, 20, "listed")) == {"fast-0", "fast-1"}


@pytest.mark.slow
def test_remote_node_killed_by_pid_is_routed_around_and_rejoins(server: RunningServer, nodes: list[NodeProcess]) -> None:
    nodes[0].kill()
    assert _served_by(server, 20, "killed") == Counter({"fast-1": 20})
    status = server.wait_for(lambda s: _node(s, "fast-0")["state"] == "down", timeout_s=10)
    assert status["ready"] and _node(status, "fast-1")["state"] == "ready"
    nodes[0].start(ready_wait_s=90.0)  # the same command line again, as a Deployment replaces its pod
    status = server.wait_for(lambda s: _node(s, "fast-0")["state"] == "ready", timeout_s=30)
    assert _node(status, "fast-0")["restarts"] == 1


@pytest.mark.slow
def test_remote_partition_is_routed_around_and_healed(server: RunningServer) -> None:
    fault = {"kind": "partition", "ttl_s": 60}
    assert server.admin("POST", "/admin/nodes/fast-0/faults", json=fault).status_code == 200
    served = _served_by(server, 20, "partitioned")
    assert served["fast-1"] == 20
    status = server.wait_for(lambda s: _node(s, "fast-0")["breaker"] == "open", timeout_s=5)
    assert _node(status, "fast-0")["faults"]
    assert server.admin("DELETE", "/admin/nodes/fast-0/faults").status_code == 200
    server.wait_for(lambda s: _node(s, "fast-0")["breaker"] == "closed" or not _node(s, "fast-0")["faults"], timeout_s=10)
    deadline = time.monotonic() + 15
    while "fast-0" not in _served_by(server, 4, f"healed {time.monotonic()}"):
        assert time.monotonic() < deadline, "the healed node never served again"


@pytest.mark.parametrize(("path", "body"), [
    ("/admin/nodes/fast-0/kill", None),
    ("/admin/nodes/fast-0/restart", {"warm": False}),
    ("/admin/pools/fast/scale", {"nodes": 3}),
])
@pytest.mark.slow
def test_remote_supervision_requests_answer_409(server: RunningServer, path: str, body: dict[str, Any] | None) -> None:
    response = server.admin("POST", path, json=body)
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "not_supervised"
    assert "remote" in error["message"] and ("kubectl scale" in error["message"] or "delete its pod" in error["message"])
    assert _all_ready(server.status())
