"""Where a remote pool's nodes are: the Endpoints of its headless Service, followed with the official
Kubernetes client's list-then-watch, re-listed whenever a watch ends or fails.

The watcher runs on a thread of its own (the client is blocking) and hands every change of the
address list to `on_change`; the cluster turns that into nodes added and removed. `api` is the
seam for tests: anything with `list_namespaced_endpoints` as `CoreV1Api` has it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rushhour.reference_server.config import KubernetesEndpoints

__all__ = ["Address", "EndpointsWatcher", "endpoint_addresses", "pod_namespace"]

log = logging.getLogger("rushhour.gateway.discovery")
NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "rushhour"
WATCH_TIMEOUT_S = 300
RETRY_S = 2.0


@dataclass(frozen=True, order=True)
class Address:
    """One node's base URL and, when the Endpoints say, the pod it belongs to."""

    url: str
    target: str | None = None


def pod_namespace(path: Path = NAMESPACE_FILE) -> str:
    """The namespace the gateway's own pod runs in, else `rushhour`."""
    try:
        return path.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


def _port_of(subset: Any, port: int | str) -> int | None:
    if isinstance(port, int):
        return port
    for candidate in subset.ports or []:
        if candidate.name == port:
            return int(candidate.port)
    return None


def endpoint_addresses(endpoints: Any, *, port: int | str, scheme: str = "http") -> list[Address]:
    """Every address of a `V1Endpoints` (ready or not: the gateway polls readiness itself), sorted."""
    found: set[Address] = set()
    for subset in (getattr(endpoints, "subsets", None) or []):
        number = _port_of(subset, port)
        if number is None:
            continue
        for address in (subset.addresses or []) + (subset.not_ready_addresses or []):
            host = f"[{address.ip}]" if ":" in address.ip else address.ip
            target = address.target_ref.name if address.target_ref is not None else None
            found.add(Address(f"{scheme}://{host}:{number}", target))
    return sorted(found)


def _default_api() -> Any:
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.CoreV1Api()


class EndpointsWatcher:
    """Follows one headless Service's Endpoints and reports its address list on every change."""

    def __init__(self, spec: KubernetesEndpoints, on_change: Callable[[list[Address]], None], *, api: Any = None,
                 watch_timeout_s: int = WATCH_TIMEOUT_S, retry_s: float = RETRY_S) -> None:
        self.spec = spec
        self.namespace = spec.namespace or pod_namespace()
        self._on_change = on_change
        self._api = api
        self._watch_timeout_s = watch_timeout_s
        self._retry_s = retry_s
        self._stopping = threading.Event()
        self._watch: Any = None
        self._last: list[Address] | None = None
        self._thread = threading.Thread(target=self._run, name=f"endpoints-{spec.service}", daemon=True)
        self.failures = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end; a watch blocked on the API ends with the process (daemon thread)."""
        self._stopping.set()
        if self._watch is not None:
            self._watch.stop()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._follow()
            except Exception as exc:  # noqa: BLE001 - the API is down, forbidden, or the watch expired (410): list again
                self.failures += 1
                log.warning('Watching the Endpoints of Service "%s" in namespace "%s" failed (%s); listing again in %.0f s.',
                            self.spec.service, self.namespace, exc, self._retry_s)
                self._stopping.wait(self._retry_s)

    def _follow(self) -> None:
        from kubernetes import watch

        if self._api is None:
            self._api = _default_api()
        selector = f"metadata.name={self.spec.service}"
        listed = self._api.list_namespaced_endpoints(self.namespace, field_selector=selector)
        self._publish(listed.items[0] if listed.items else None)
        self._watch = watch.Watch()
        events = self._watch.stream(self._api.list_namespaced_endpoints, self.namespace, field_selector=selector,
                                    resource_version=listed.metadata.resource_version, timeout_seconds=self._watch_timeout_s)
        for event in events:
            if self._stopping.is_set():
                return
            self._publish(None if event["type"] == "DELETED" else event["object"])

    def _publish(self, endpoints: Any) -> None:
        addresses = endpoint_addresses(endpoints, port=self.spec.port, scheme=self.spec.scheme)
        if addresses != self._last:
            self._last = addresses
            self._on_change(addresses)
