"""Nodes of remote pools: started elsewhere (`rushhour node`, a pod of a pool Deployment) and
reached over the network through the same fault proxy as local nodes.

Their addresses come from the pool's static `remote:` list or from the Endpoints of its headless
Service (`discovery.py`). Where the supervisor would watch a process, this polls `/health`: the
node's state (warming, ready) comes from its answer, and a node that has not answered
`DOWN_AFTER_MISSES` polls in a row is down until it answers again. Breakers guard the traffic
exactly as for local nodes. An address that leaves the Endpoints takes its node out of the table.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import httpx

from rushhour.reference_server.gateway.discovery import Address, EndpointsWatcher
from rushhour.reference_server.gateway.nodes import NodeHandle, make_client

if TYPE_CHECKING:
    from rushhour.reference_server.gateway.cluster import Cluster

__all__ = ["DOWN_AFTER_MISSES", "RemoteNodes"]

log = logging.getLogger("rushhour.gateway")
DOWN_AFTER_MISSES = 3


class RemoteNodes:
    """Adds, polls and removes the nodes of the cluster's remote pools."""

    def __init__(self, cluster: Cluster, health: httpx.AsyncClient) -> None:
        self._cluster = cluster
        self._health = health
        self.watchers: dict[str, EndpointsWatcher] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, *, api: object = None) -> None:
        """Static lists become nodes now; each Kubernetes pool gets a watcher (`api`: a test's fake)."""
        self._loop = asyncio.get_running_loop()
        for name, pool in self._cluster.config.pools.items():
            if pool.remote:
                self.set_addresses(name, [Address(url.rstrip("/")) for url in pool.remote])
            elif pool.kubernetes is not None:
                watcher = EndpointsWatcher(pool.kubernetes, functools.partial(self._from_thread, name), api=api)
                self.watchers[name] = watcher
                watcher.start()

    def stop(self) -> None:
        for watcher in self.watchers.values():
            watcher.stop()

    def _from_thread(self, pool: str, addresses: list[Address]) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.set_addresses, pool, addresses)

    def set_addresses(self, pool: str, addresses: Sequence[Address]) -> None:
        """Make the pool's nodes exactly `addresses`: new ones join (starting, until their first
        answer says ready), those no longer listed leave at once."""
        cluster = self._cluster
        current = {node.url: node for node in cluster.pool_nodes(pool)}
        wanted = {address.url: address for address in addresses}
        for url, node in current.items():
            if url not in wanted:
                self._remove(node)
        for url, address in wanted.items():  # in the given order: a static list's first URL is node 0
            found = current.get(url)
            added = found if found is not None else self._add(pool, address)
            added.target = address.target

    def _add(self, pool: str, address: Address) -> NodeHandle:
        cluster = self._cluster
        node = cluster.register(pool, url=address.url)
        node.client, node.transport = make_client(address.url, node_timeout_s=cluster.config.node_timeout_s)
        cluster.set_state(node, "starting")
        cluster.event("node_added", node, url=address.url, target=address.target)
        log.info("remote node %s added at %s (%s)", node.id, address.url, address.target or "static")
        return node

    def _remove(self, node: NodeHandle) -> None:
        cluster = self._cluster
        node.removed = True
        cluster.set_state(node, "down")
        if cluster.nodes.get(node.id) is node:
            del cluster.nodes[node.id]
        cluster.event("node_removed", node, url=node.url)
        log.info("remote node %s at %s removed", node.id, node.url)
        if node.client is not None:
            asyncio.get_running_loop().create_task(node.client.aclose())

    async def check(self, node: NodeHandle) -> None:
        """One readiness poll: apply the node's `/health`, or count a miss."""
        try:
            response = await self._health.get(f"{node.url}/health")
            response.raise_for_status()
            health = response.json()
        except (httpx.HTTPError, ValueError):
            self._missed(node)
            return
        if node.removed:
            return
        if node.state == "down":
            node.restarts += 1  # it came back: a restarted process or pod behind the same address
        node.misses = 0
        self._cluster.apply_health(node, health)

    def _missed(self, node: NodeHandle) -> None:
        node.misses += 1
        if node.misses >= DOWN_AFTER_MISSES and node.state != "down" and not node.removed:
            node.queue_depth = 0
            self._cluster.set_state(node, "down")
            self._cluster.event("node_down", node, url=node.url, misses=node.misses)
