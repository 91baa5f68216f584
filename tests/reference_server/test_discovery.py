"""The Endpoints watcher against a fake Kubernetes API: the official client's `Watch` reads the
fake's event stream exactly as it reads the API server's, so list, watch, a pod going and coming,
a 410 Gone and a failing API are all exercised without a cluster. The live test needs KUBECONFIG."""

from __future__ import annotations

import json
import os
import queue
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kubernetes.client import V1EndpointsList

from rushhour.reference_server.config import KubernetesEndpoints
from rushhour.reference_server.gateway.discovery import (
    Address,
    EndpointsWatcher,
    endpoint_addresses,
)

SPEC = KubernetesEndpoints(service="rushhour-fast", namespace="drill", port="http")


def endpoints(*ips: str, not_ready: tuple[str, ...] = (), version: str = "1") -> dict[str, Any]:
    def address(ip: str) -> dict[str, Any]:
        return {"ip": ip, "targetRef": {"kind": "Pod", "name": f"pod-{ip.replace(':', '.').rsplit('.', 1)[-1]}"}}
    subset = {"addresses": [address(ip) for ip in ips], "notReadyAddresses": [address(ip) for ip in not_ready],
              "ports": [{"name": "http", "port": 9000, "protocol": "TCP"}]}
    return {"apiVersion": "v1", "kind": "Endpoints", "subsets": [subset],
            "metadata": {"name": "rushhour-fast", "namespace": "drill", "resourceVersion": version}}


class FakeResponse:
    """A watch response: one JSON event per line, as the API server streams them."""

    def __init__(self, events: queue.Queue[dict[str, Any] | None]) -> None:
        self.status = 200
        self._events = events

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        while (event := self._events.get()) is not None:
            yield (json.dumps(event) + "\n").encode()

    def close(self) -> None: ...

    def release_conn(self) -> None: ...


class FakeCoreV1:
    """`list_namespaced_endpoints` as CoreV1Api has it: a list, or (watch=True) an event stream."""

    def __init__(self, listed: dict[str, Any]) -> None:
        self.listed = listed
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.calls: list[dict[str, Any]] = []
        self.fail_lists = 0

    def list_namespaced_endpoints(self, namespace: str, **kwargs: Any) -> V1EndpointsList:  # the name Watch reads
        self.calls.append({"namespace": namespace, **kwargs})
        if kwargs.get("watch"):
            return FakeResponse(self.events)  # as the real API: a watch gets the raw stream
        from kubernetes import client  # the official client (0.4 s) only where a test talks to it

        if self.fail_lists:
            self.fail_lists -= 1
            raise client.ApiException(status=403, reason="Forbidden")
        body = {"apiVersion": "v1", "kind": "EndpointsList", "metadata": {"resourceVersion": "1"}, "items": [self.listed]}
        return client.ApiClient().deserialize(json.dumps(body), "V1EndpointsList", "application/json")


@pytest.fixture
def api() -> FakeCoreV1:
    return FakeCoreV1(endpoints("2001:db8::1", not_ready=("2001:db8::2",)))


@pytest.fixture
def seen() -> list[list[Address]]:
    return []


@pytest.fixture
def watcher(api: FakeCoreV1, seen: list[list[Address]]) -> Iterator[EndpointsWatcher]:
    running = EndpointsWatcher(SPEC, seen.append, api=api, retry_s=0.05)
    running.start()
    yield running
    running.stop()
    api.events.put(None)


def _until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def _urls(addresses: list[Address]) -> list[str]:
    return [a.url for a in addresses]


def test_discovery_lists_ready_and_warming_pods_with_their_names(watcher: EndpointsWatcher,
                                                                 seen: list[list[Address]], api: FakeCoreV1) -> None:
    _until(lambda: len(seen) == 1)
    assert seen[0] == [Address("http://[2001:db8::1]:9000", "pod-1"), Address("http://[2001:db8::2]:9000", "pod-2")]
    assert api.calls[0] == {"namespace": "drill", "field_selector": "metadata.name=rushhour-fast"}


def test_discovery_follows_pods_going_and_coming(watcher: EndpointsWatcher, seen: list[list[Address]], api: FakeCoreV1) -> None:
    _until(lambda: len(seen) == 1)
    api.events.put({"type": "MODIFIED", "object": endpoints("2001:db8::2", version="2")})
    _until(lambda: len(seen) == 2)
    assert _urls(seen[1]) == ["http://[2001:db8::2]:9000"]
    api.events.put({"type": "MODIFIED", "object": endpoints("2001:db8::2", version="3")})  # no change: not reported
    api.events.put({"type": "MODIFIED", "object": endpoints("2001:db8::2", "2001:db8::3", version="4")})
    _until(lambda: len(seen) == 3)
    assert _urls(seen[2]) == ["http://[2001:db8::2]:9000", "http://[2001:db8::3]:9000"]
    api.events.put({"type": "DELETED", "object": endpoints(version="5")})
    _until(lambda: len(seen) == 4)
    assert seen[3] == []
    watch_call = next(c for c in api.calls if c.get("watch"))
    assert watch_call["resource_version"] == "1" and watch_call["field_selector"] == "metadata.name=rushhour-fast"


def test_discovery_lists_again_after_410_gone(watcher: EndpointsWatcher, seen: list[list[Address]], api: FakeCoreV1) -> None:
    _until(lambda: len(seen) == 1)
    api.listed = endpoints("2001:db8::9", version="7")
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    api.events.put({"type": "ERROR", "object": gone})  # a timed watch is not retried by the client: it raises
    _until(lambda: len(seen) == 2)
    assert _urls(seen[1]) == ["http://[2001:db8::9]:9000"]
    assert watcher.failures == 1


def test_discovery_retries_an_api_that_refuses() -> None:
    api = FakeCoreV1(endpoints("2001:db8::1"))
    api.fail_lists = 2
    seen: list[list[Address]] = []
    watcher = EndpointsWatcher(SPEC, seen.append, api=api, retry_s=0.01)
    watcher.start()
    try:
        _until(lambda: len(seen) == 1)
    finally:
        watcher.stop()
        api.events.put(None)
    assert watcher.failures == 2 and _urls(seen[0]) == ["http://[2001:db8::1]:9000"]


def test_discovery_port_by_number_and_ipv6() -> None:
    from kubernetes import client

    model = client.ApiClient().deserialize(json.dumps(endpoints("fd00::5")), "V1Endpoints", "application/json")
    assert _urls(endpoint_addresses(model, port=9100)) == ["http://[fd00::5]:9100"]
    assert endpoint_addresses(model, port="grpc") == []
    assert endpoint_addresses(None, port="http") == []


def test_discovery_events_reach_the_cluster_on_its_loop() -> None:
    """The watcher's thread hands changes to the event loop, never touching the table itself."""
    import asyncio

    from rushhour.reference_server.config import ServerConfig
    from rushhour.reference_server.gateway.cluster import Cluster
    from rushhour.reference_server.gateway.metrics import Metrics

    config = ServerConfig.model_validate({"pools": {"fast": {"model": "fast", "kubernetes": SPEC.model_dump()}}})
    api = FakeCoreV1(endpoints("127.0.0.1"))

    async def scenario() -> list[tuple[str, str | None, str | None]]:
        cluster = Cluster(config, Metrics())
        cluster.remote.start(api=api)
        for _ in range(200):
            if cluster.nodes:
                break
            await asyncio.sleep(0.01)
        found = [(n.id, n.url, n.target) for n in cluster.nodes.values()]
        api.events.put({"type": "MODIFIED", "object": endpoints(version="2")})
        for _ in range(200):
            if not cluster.nodes:
                break
            await asyncio.sleep(0.01)
        found += [(n.id, n.url, n.target) for n in cluster.nodes.values()]
        cluster.remote.stop()
        api.events.put(None)
        return found

    assert asyncio.run(scenario()) == [("fast-0", "http://127.0.0.1:9000", "pod-1")]


@pytest.mark.skipif(not os.environ.get("KUBECONFIG"), reason="needs a Kubernetes cluster: KUBECONFIG not set")
def test_discovery_live_cluster_lists_the_fast_pool() -> None:
    found: list[list[Address]] = []
    spec = KubernetesEndpoints(service="rushhour-fast", namespace=os.environ.get("RUSHHOUR_NAMESPACE", "rushhour"))
    watcher = EndpointsWatcher(spec, found.append)
    watcher.start()
    try:
        _until(lambda: bool(found), timeout_s=30)
    finally:
        watcher.stop()
    assert all(a.url.endswith(":9000") for a in found[0])
