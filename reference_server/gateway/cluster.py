"""The gateway's supervisor of local nodes, the way a kubelet supervises pods.

Nodes of a remote pool (`remote:` URLs or a Kubernetes Service, see `remote.py`) sit in the same
table and take traffic the same way, but are not ours: they are polled for readiness instead of
supervised, and kill, restart and scale refuse them with `NotSupervised`.

It starts every node of every pool, watches their processes and health, restarts a
crashed node with exponential backoff, and carries out the admin operations that chaos
drills call: kill, restart (warm or cold), scale a pool, stop everything.

Scaling a pool holds that pool's lock from reading its size to the last node removed, so two
scale operations (an autoscaler drain and a chaos rollback's reset) run one after the other
instead of draining the same node twice. Nothing here waits for a process in a blocking call
on the event loop except an instant SIGKILL reap.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import Callable

import httpx

from rushhour.reference_server.aio import cancel_and_wait
from rushhour.reference_server.config import ServerConfig
from rushhour.reference_server.gateway.breaker import CircuitBreaker
from rushhour.reference_server.gateway.metrics import Metrics
from rushhour.reference_server.gateway.nodes import (
    NodeHandle,
    Spawner,
    kill_now,
    make_client,
    spawn_process,
    stop_node_process,
)
from rushhour.reference_server.gateway.remote import RemoteNodes
from rushhour.reference_server.model import build_model
from rushhour.reference_server.node.protocol import EXIT_REFUSED

log = logging.getLogger("rushhour.gateway")
HEALTH_INTERVAL_S = 0.25
STABLE_AFTER_S = 30.0


class UnknownNode(LookupError):
    pass


class NotSupervised(RuntimeError):
    """An admin operation on a node or pool that runs elsewhere: the gateway cannot start or kill it."""



def _count(health: dict[str, object], key: str) -> int:
    """A whole-number field of a node's health answer (0 when absent)."""
    value = health.get(key, 0)
    return int(value) if isinstance(value, (int, float, str)) else 0


def batching_label(health: dict[str, object], known: str = "unknown") -> str:
    """How a node batches, in words for status and reports: "dynamic", "continuous", or
    "continuous, chunked prefill N tokens/step"."""
    mode = health.get("batching")
    if not mode:
        return known
    tokens = int(health.get("prefill_tokens_per_step") or 0)  # type: ignore[call-overload]
    return f"{mode}, chunked prefill {tokens} tokens/step" if mode == "continuous" and tokens else str(mode)


class Cluster:
    def __init__(
        self, config: ServerConfig, metrics: Metrics, *,
        on_event: Callable[[dict[str, object]], object] | None = None, spawn: Spawner = spawn_process,
    ) -> None:
        self.config = config
        self.metrics = metrics
        self.nodes: dict[str, NodeHandle] = {}
        self._carry: dict[str, list[int]] = {name: [0, 0] for name in config.pools}
        self._backoff: dict[str, float] = {}
        self._health = httpx.AsyncClient(timeout=httpx.Timeout(1.0, connect=0.25))
        self._task: asyncio.Task[None] | None = None
        self._on_event = on_event or (lambda event: None)
        self._spawn = spawn
        self._scaling = {name: asyncio.Lock() for name in config.pools}
        self.started = time.monotonic()
        self.remote = RemoteNodes(self, self._health)

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        tiers = {pool.model for pool in self.config.pools.values() if pool.nodes > 0 and not pool.is_remote}
        for tier in sorted(tiers):  # build once here, so nodes never race to build
            await loop.run_in_executor(None, functools.partial(build_model, tier, cache_dir=self.config.model_cache_dir))
        for name, pool in self.config.pools.items():
            for _ in range(0 if pool.is_remote else pool.nodes):
                self._add_node(name)
        self.remote.start()
        self._task = loop.create_task(self._supervise(), name="supervisor")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self.remote.stop()
        nodes = list(self.nodes.values())
        await asyncio.gather(*(stop_node_process(node.proc, graceful_s=2.0) for node in nodes))
        for node in nodes:
            node.state = "down"
            if node.client is not None:
                await node.client.aclose()
        await self._health.aclose()

    # ---- queries ---------------------------------------------------------------------------
    def node(self, node_id: str) -> NodeHandle:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise UnknownNode(f'There is no node "{node_id}"; nodes are {sorted(self.nodes)}.') from None

    def pool_nodes(self, pool: str) -> list[NodeHandle]:
        return [n for n in self.nodes.values() if n.pool == pool and not n.removed]

    def ready(self) -> bool:
        """Ready when every required pool with nodes has at least one ready node."""
        for name, pool in self.config.pools.items():
            if pool.required and (pool.nodes > 0 or pool.is_remote) and not any(n.state == "ready" for n in self.pool_nodes(name)):
                return False
        return True

    def batch_totals(self, pool: str) -> tuple[int, int]:
        batches, items = self._carry[pool]
        for node in self.pool_nodes(pool):
            batches += node.batches_total
            items += node.batch_items_total
        return batches, items

    # ---- operations ------------------------------------------------------------------------
    def _add_node(self, pool: str, *, warm: bool = True) -> NodeHandle:
        node = self.register(pool)
        self._launch(node, warm=warm)
        return node

    def register(self, pool: str, *, url: str | None = None) -> NodeHandle:
        """A new node in the table, with its breaker; a local one still has to be launched.
        Remote nodes are named by ordinal too, so metric labels stay bounded as pods come and go."""
        # The lowest free ordinal, as a StatefulSet does: after a scale to 0 and back (or an
        # admin reset) the pool has quality-0, quality-1 again, the names drills target.
        taken = {n.index for n in self.nodes.values() if n.pool == pool}
        index = next(i for i in itertools.count() if i not in taken)
        node_id = f"{pool}-{index}"
        self._backoff.pop(node_id, None)  # a new node, not the crash history of an earlier one
        breaker = CircuitBreaker(self.config.breaker, on_change=functools.partial(self._breaker_changed, node_id))
        node = NodeHandle(id=node_id, pool=pool, index=index, breaker=breaker, url=url)
        self.nodes[node_id] = node
        self.metrics.set_breaker_state(node_id, "closed")
        return node

    def _launch(self, node: NodeHandle, *, warm: bool) -> None:
        pool = self.config.pools[node.pool]
        self._retire_counters(node)
        node.proc, node.port = self._spawn(node, pool, warm=warm, model_cache_dir=self.config.model_cache_dir)
        old_client = node.client
        node.client, node.transport = make_client(node.base_url, node_timeout_s=self.config.node_timeout_s)
        if old_client is not None:
            asyncio.get_running_loop().create_task(old_client.aclose())
        node.warm = warm
        node.started_at = time.monotonic()
        node.ready_since = None
        node.restart_at = None
        node.cold_start_s = node.first_request_ms = None
        node.health_read_at = None
        self.set_state(node, "starting")
        log.info("node %s started (pid %s, port %s, %s)", node.id, node.pid, node.port, "warm" if warm else "cold")

    def _retire_counters(self, node: NodeHandle) -> None:
        carry = self._carry[node.pool]
        carry[0] += node.batches_total
        carry[1] += node.batch_items_total
        node.batches_total = node.batch_items_total = 0

    async def kill(self, node_id: str, *, restart: bool = True, ttl_s: float | None = None) -> NodeHandle:
        """SIGKILL, no goodbye. The supervisor notices and restarts it after its backoff; with
        `restart=False` it stays down until an admin restart or reset (an N-1 capacity test), or
        until its lease `ttl_s` runs out unrenewed (`renew_down`), whichever comes first."""
        node = self._own(node_id, "kill")
        kill_now(node.proc)
        self.event("node_killed", node, restart=restart, ttl_s=None if restart else ttl_s)
        if not restart:
            node.restart_at = None  # a node already down is not relaunched by _handle_exit below
        self._handle_exit(node)  # down at once, not at the next health tick
        if not restart:
            node.restart_at = None if ttl_s is None else time.monotonic() + ttl_s
            node.held_down = True
        return node

    def renew_down(self, node_id: str, ttl_s: float) -> bool:
        """Keep a node killed with `restart=False` down `ttl_s` more; False when it is not held down."""
        node = self.node(node_id)
        if not node.held_down or node.state != "down":
            return False
        node.restart_at = time.monotonic() + ttl_s
        return True

    async def restart(self, node_id: str, *, warm: bool) -> NodeHandle:
        """Kill and start again at once (no await in between, so the supervisor cannot start it
        too). A node being scaled away is left to its removal, never brought back."""
        node = self._own(node_id, "restart")
        if node.removed:
            return node
        kill_now(node.proc)
        node.held_down = False
        node.restarts += 1
        self.metrics.node_restarts.labels(node.id, "admin").inc()
        node.breaker.reset()
        self._launch(node, warm=warm)
        self.event("node_restarted", node, warm=warm)
        return node

    async def scale(self, pool: str, count: int, *, reason: str = "admin") -> list[NodeHandle]:
        """Give `pool` exactly `count` nodes: start the lowest free ordinals, or drain and stop the
        highest. Serialised per pool; the nodes being removed drain in parallel."""
        if pool not in self.config.pools:
            raise UnknownNode(f'There is no pool "{pool}"; pools are {sorted(self.config.pools)}.')
        if self.config.pools[pool].is_remote:
            raise NotSupervised(
                f'Pool "{pool}" is made of remote nodes, which the gateway does not start or stop, so it cannot scale '
                f"it; scale where its nodes run (e.g. kubectl scale deployment/rushhour-{pool} --replicas={count}).")
        async with self._scaling[pool]:
            current = sorted(self.pool_nodes(pool), key=lambda n: n.index)
            direction = "up" if count > len(current) else "down"
            for _ in range(count - len(current)):
                self._add_node(pool)
            await asyncio.gather(*(self._drain_and_remove(node) for node in current[count:]))
            if count != len(current):
                self.metrics.scale_events.labels(pool, direction).inc()
                self._on_event({"type": "scale", "pool": pool, "nodes": count, "reason": reason})
            return self.pool_nodes(pool)

    def _own(self, node_id: str, operation: str) -> NodeHandle:
        node = self.node(node_id)
        if node.remote:
            raise NotSupervised(
                f'Node "{node.id}" is a remote node at {node.url}: its process is not the gateway\'s to {operation}. '
                f"Act where it runs (e.g. delete its pod), or inject a fault through /admin/nodes/{node.id}/faults.")
        return node

    async def _drain_and_remove(self, node: NodeHandle, *, timeout_s: float = 10.0) -> None:
        node.removed = True
        self._retire_counters(node)  # now: a removed node's health is no longer read
        self.set_state(node, "draining")
        deadline = time.monotonic() + timeout_s
        while node.inflight > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await stop_node_process(node.proc, graceful_s=2.0)
        self.set_state(node, "down")
        if self.nodes.get(node.id) is node:
            del self.nodes[node.id]
        if node.client is not None:
            await node.client.aclose()

    # ---- supervision -----------------------------------------------------------------------
    async def _supervise(self) -> None:
        while True:
            await asyncio.gather(*(self._check(node) for node in list(self.nodes.values())), return_exceptions=True)
            await asyncio.sleep(HEALTH_INTERVAL_S)

    async def _check(self, node: NodeHandle) -> None:
        if node.removed:
            return
        if node.remote:
            await self.remote.check(node)
            return
        if not node.alive():
            self._handle_exit(node)
            return
        proc = node.proc
        try:
            response = await self._health.get(f"http://127.0.0.1:{node.port}/health")
            health = response.json()
        except (httpx.HTTPError, ValueError):
            return  # still starting, or busy; the process check above decides life and death
        if node.proc is not proc or node.removed or not node.alive():
            return  # killed or replaced while we asked: this answer is about a process that is gone
        self.apply_health(node, health)

    def apply_health(self, node: NodeHandle, health: dict[str, object]) -> None:
        node.provider = str(health.get("provider", node.provider))
        node.batching = batching_label(health, node.batching)
        node.model = str(health.get("model", node.model))
        node.queue_depth = _count(health, "queue_depth")
        self._decode_rates(node, _count(health, "batches_total"), _count(health, "batch_items_total"))
        node.active_rows = _count(health, "active_rows")
        self.metrics.node_active_rows.labels(node.id, node.pool).set(node.active_rows)
        node.expired_total = _count(health, "expired_total")
        node.cold_start_s = health.get("cold_start_s")  # type: ignore[assignment]
        node.first_request_ms = health.get("first_request_ms")  # type: ignore[assignment]
        state = str(health.get("state", "starting"))
        if state == "ready" and node.state != "ready":
            node.ready_since = time.monotonic()
            self.event("node_ready", node)
        self.set_state(node, state)
        if node.ready_since and time.monotonic() - node.ready_since > STABLE_AFTER_S:
            self._backoff.pop(node.id, None)
        self.metrics.node_queue_depth.labels(node.id, node.pool).set(node.queue_depth)
        if node.provider != "unknown":
            self.metrics.provider.labels(node.id, node.pool, node.provider).set(1)
        if node.cold_start_s is not None:
            self.metrics.cold_start_seconds.labels(node.id).set(float(node.cold_start_s))
        if node.first_request_ms is not None:
            self.metrics.first_request_seconds.labels(node.id).set(float(node.first_request_ms) / 1000.0)

    def _decode_rates(self, node: NodeHandle, batches: int, items: int) -> None:
        """Steps and rows since the last read feed the pool's counters; tokens per second is the
        rows decoded (a continuous row gives one token a step) over the time between reads
        (dynamic batches count requests, not tokens)."""
        now = time.monotonic()
        new_batches, new_items = batches - node.batches_total, items - node.batch_items_total
        if new_batches >= 0 and new_items >= 0:
            self.metrics.decode_steps.labels(node.pool).inc(new_batches)
            self.metrics.decode_rows.labels(node.pool).inc(new_items)
            if node.health_read_at is not None and now > node.health_read_at:
                self.metrics.node_tokens_per_second.labels(node.id, node.pool).set(new_items / (now - node.health_read_at))
        node.batches_total, node.batch_items_total, node.health_read_at = batches, items, now

    def _handle_exit(self, node: NodeHandle) -> None:
        now = time.monotonic()
        if node.state != "down":
            if node.proc is not None:
                node.proc.wait()
            self.set_state(node, "down")
            if node.proc is not None and node.proc.returncode == EXIT_REFUSED:
                node.restart_at = None  # it refused its configuration (e.g. require_provider); restarting cannot help
                node.queue_depth = 0
                self.event("node_refused", node, exit_code=EXIT_REFUSED)
                return
            delay = self._backoff.get(node.id, self.config.restart_backoff_s)
            self._backoff[node.id] = min(max(delay * 2, 0.1), self.config.max_restart_backoff_s)
            node.restart_at = now + delay
            node.queue_depth = 0
            self.event("node_down", node, restart_in_s=round(delay, 3))
        elif node.restart_at is not None and now >= node.restart_at:
            node.held_down = False
            node.restarts += 1
            self.metrics.node_restarts.labels(node.id, "crash").inc()
            self._launch(node, warm=True)

    def set_state(self, node: NodeHandle, state: str) -> None:
        if node.state != state:
            node.state = state
        self.metrics.set_node_state(node.id, node.pool, state)

    def _breaker_changed(self, node_id: str, state: str) -> None:
        self.metrics.set_breaker_state(node_id, state)
        self.metrics.breaker_transitions.labels(node_id, state).inc()
        self._on_event({"type": "breaker", "node": node_id, "state": state})

    def event(self, kind: str, node: NodeHandle, **extra: object) -> None:
        self._on_event({"type": kind, "node": node.id, "pool": node.pool, **extra})
