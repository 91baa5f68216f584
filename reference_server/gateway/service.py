"""The path of one translate request: rate limit, cache, coalescing, admission, routing,
the node call with at most one retry, and fallback when a pool cannot serve."""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from rushhour.reference_server.config import ServerConfig
from rushhour.reference_server.gateway.admission import Overloaded, PoolDispatcher, TokenBuckets
from rushhour.reference_server.gateway.api import (
    ApiError,
    Timing,
    TranslateRequest,
    TranslateResponse,
)
from rushhour.reference_server.gateway.cache import (
    CachedTranslation,
    CacheKey,
    Coalescer,
    TranslationCache,
    cache_key,
)
from rushhour.reference_server.gateway.cluster import Cluster
from rushhour.reference_server.gateway.l2cache import L2Cache
from rushhour.reference_server.gateway.metrics import Metrics
from rushhour.reference_server.gateway.nodes import NodeHandle
from rushhour.reference_server.gateway.placement import choose_tier
from rushhour.reference_server.gateway.streamcall import PieceSink, post_streaming

RETRYABLE = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
MIN_RETRY_BUDGET_S = 0.05


def _error_code(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return ""


def _key(req: TranslateRequest, tier: str) -> CacheKey:
    """A capped output (`max_tokens`) is cached apart from the whole one."""
    return cache_key(req.text, req.source_lang, req.target_lang, tier if req.max_tokens is None else f"{tier}/max{req.max_tokens}")


class Unavailable(Exception):
    """No node of the pool can take the request right now."""


@dataclass
class Served:
    translation: str
    model: str
    node: str
    queue_ms: float
    infer_ms: float
    degraded: bool = False
    cached: bool = False
    queue_position: int | None = None


class TranslationService:
    def __init__(self, config: ServerConfig, cluster: Cluster, metrics: Metrics) -> None:
        self.config = config
        self.cluster = cluster
        self.metrics = metrics
        self.cache = TranslationCache(
            max_entries=config.cache.max_entries if config.cache.enabled else 0,
            ttl_s=config.cache.ttl_s,
            stale_ttl_s=config.cache.stale_ttl_s,
            max_bytes=config.cache.max_bytes,
        )
        self.coalescer = Coalescer()
        self.buckets = TokenBuckets(config.admission.classes)
        self.dispatchers = {
            name: PoolDispatcher(name, config.admission.classes, functools.partial(self._capacity, name),
                                 early_reject=config.admission.early_reject)
            for name in config.pools
        }
        self._rr = itertools.count()
        redis_url = config.cache.redis_url if config.cache.enabled else None
        self.l2 = L2Cache(redis_url, ttl_s=config.cache.ttl_s, metrics=metrics) if redis_url else None

    # ---- entry point ------------------------------------------------------------------------
    async def translate(self, req: TranslateRequest, *, on_piece: Callable[[str], None] | None = None) -> TranslateResponse:
        """Serve one request; with `on_piece`, its pieces are handed over as the node decodes them
        (not coalesced; a cached or fallback answer hands over nothing: the caller has it whole)."""
        started = time.monotonic()
        sink = PieceSink(on_piece) if on_piece is not None else None
        priority = self.check(req)
        deadline = started + (req.deadline_ms or self.config.admission.default_deadline_ms) / 1000.0
        wait = self.buckets.take(req.tenant, priority)
        if wait > 0:
            self.metrics.shed.labels("rate_limited", priority).inc()
            raise ApiError(429, "rate_limited", f'Tenant "{req.tenant}" is over its "{priority}" rate.', retry_after_s=wait)
        tier = choose_tier(self.config.routing, req, priority, has_fast_pool=self._fast_routable())
        key = _key(req, tier)
        hit = self.cache.get(key)
        if hit is not None:
            self.metrics.cache_hits.labels("l1").inc()
            served = Served(hit.translation, hit.model, "cache", 0.0, 0.0, cached=True)
        elif (l2_hit := await self._l2_get(key)) is not None:
            served = l2_hit
        elif sink is not None:
            self.metrics.cache_misses.inc()
            served = await self._compute(req, tier, priority, deadline, sink)
        else:
            self.metrics.cache_misses.inc()
            served, shared = await self.coalescer.run(
                (key, priority, req.on_overload), lambda: self._compute(req, tier, priority, deadline)
            )
            if shared:
                self.metrics.coalesced.inc()
        total_ms = (time.monotonic() - started) * 1000.0
        return TranslateResponse(
            translation=served.translation,
            model=served.model,
            cached=served.cached,
            degraded=served.degraded,
            node=served.node,
            chars=len(req.text),
            timing=Timing(queue_ms=round(served.queue_ms, 3), infer_ms=round(served.infer_ms, 3), total_ms=round(total_ms, 3)),
            queue_position=served.queue_position,
        )

    def check(self, req: TranslateRequest) -> str:
        """The priority class of a request the service would take; raises ApiError (413, 422) otherwise."""
        if len(req.text) > self.config.max_chars:
            raise ApiError(413, "text_too_large", f"The text has {len(req.text)} characters; the limit is {self.config.max_chars}.")
        for field, lang in (("source_lang", req.source_lang), ("target_lang", req.target_lang)):
            if lang.lower() not in self.config.languages:
                raise ApiError(422, "unsupported_language",
                               f'Field "{field}": language "{lang}" is not served; served are {self.config.languages}.')
        priority = req.priority or self.config.admission.default_priority
        if priority not in self.config.admission.classes:
            raise ApiError(422, "invalid_field", f'Field "priority": "{priority}" is not one of {sorted(self.config.admission.classes)}.')
        return priority

    # ---- compute with fallback ----------------------------------------------------------------
    async def _compute(self, req: TranslateRequest, tier: str, priority: str, deadline: float, sink: PieceSink | None = None) -> Served:
        pool = self.config.pool_for_tier(tier)
        try:
            if pool is None:
                raise Unavailable(f'No pool serves the "{tier}" model.')
            served = await self._serve_on_pool(pool, req, priority, deadline, sink)
        except Unavailable as exc:
            if sink is not None and sink.emitted:
                raise ApiError(503, "unavailable", f"The stream broke after {sink.emitted} pieces: {exc}", retry_after_s=1.0) from None
            return await self._fallback(req, tier, priority, deadline, "unavailable", str(exc), allow_fast=tier == "quality", sink=sink)
        except Overloaded as exc:
            self.metrics.shed.labels(exc.reason, priority).inc()
            if req.on_overload == "reject":
                raise self._overload_error(exc) from None
            return await self._fallback(req, tier, priority, deadline, exc.reason, str(exc),
                                        allow_fast=req.on_overload == "fast" and tier == "quality", overload=exc,
                                        sink=sink)
        self._store(_key(req, tier), served)
        return served

    async def _fallback(
        self, req: TranslateRequest, tier: str, priority: str, deadline: float, reason: str, message: str,
        *, allow_fast: bool, overload: Overloaded | None = None, sink: PieceSink | None = None,
    ) -> Served:
        fast_pool = self.config.pool_for_tier("fast")
        if allow_fast and fast_pool is not None:
            try:
                served = await self._serve_on_pool(fast_pool, req, priority, deadline, sink)
            except (Unavailable, Overloaded):
                pass
            else:
                self.metrics.degraded.labels("fast_pool").inc()
                served.degraded = True
                self._store(_key(req, "fast"), served)
                return served
        stale = self._stale(req, tier)
        if stale is not None:
            self.metrics.degraded.labels("stale_cache").inc()
            return Served(stale.translation, stale.model, "cache", 0.0, 0.0, degraded=True, cached=True)
        if overload is not None:
            raise self._overload_error(overload)
        self.metrics.shed.labels("unavailable", priority).inc()
        raise ApiError(503, "unavailable", f"No node can serve the request now: {message}", retry_after_s=1.0)

    async def _l2_get(self, key: CacheKey) -> Served | None:
        """An L1 miss asks the shared L2; a hit fills L1 so the next one stays in process."""
        if self.l2 is None:
            return None
        hit = await self.l2.get(key)
        if hit is None:
            return None
        self.metrics.cache_hits.labels("l2").inc()
        self.cache.put(key, hit.translation, hit.model)
        return Served(hit.translation, hit.model, "cache", 0.0, 0.0, cached=True)

    def _store(self, key: CacheKey, served: Served) -> None:
        self.cache.put(key, served.translation, served.model)
        if self.l2 is not None:
            self.l2.put_soon(key, served.translation, served.model)

    def _stale(self, req: TranslateRequest, tier: str) -> CachedTranslation | None:
        for t in (tier, "fast" if tier == "quality" else "quality"):
            entry = self.cache.get_stale(_key(req, t))
            if entry is not None:
                return entry
        return None

    @staticmethod
    def _overload_error(exc: Overloaded) -> ApiError:
        extra: dict[str, object] = {"reason": exc.reason}
        if exc.estimate_ms is not None:
            extra["estimated_wait_ms"] = exc.estimate_ms
        return ApiError(503, "overloaded", str(exc), retry_after_s=exc.retry_after_s, **extra)

    # ---- one pool ---------------------------------------------------------------------------
    async def _serve_on_pool(self, pool: str, req: TranslateRequest, priority: str, deadline: float,
                             sink: PieceSink | None = None) -> Served:
        if not any(n.routable() for n in self.cluster.pool_nodes(pool)):
            raise Unavailable(f"pool {pool} has no ready node with a closed breaker")
        dispatcher = self.dispatchers[pool]
        waited_s, position = await dispatcher.acquire(priority, deadline)
        self.metrics.admission_seconds.labels(pool, priority).observe(waited_s)
        granted = time.monotonic()
        held_s: float | None = None
        try:
            served = await self._call_with_retry(pool, req, priority, deadline, sink)
            held_s = time.monotonic() - granted
        finally:
            dispatcher.release(completed=held_s is not None, held_s=held_s, priority=priority)
        served.queue_ms += waited_s * 1000.0
        served.queue_position = position or None
        return served

    async def _call_with_retry(self, pool: str, req: TranslateRequest, priority: str, deadline: float,
                               sink: PieceSink | None = None) -> Served:
        tried: set[str] = set()
        for attempt in range(2):
            node = self._pick(pool, tried)
            if node is None:
                raise Unavailable(f"pool {pool} has no other routable node")
            tried.add(node.id)
            try:
                return await self._call(node, req, priority, deadline, sink)
            except RETRYABLE as exc:
                if attempt == 1 or deadline - time.monotonic() < MIN_RETRY_BUDGET_S or (sink is not None and sink.emitted):
                    raise Unavailable(f"node {node.id} failed ({type(exc).__name__}) and no retry was possible") from None
                self.metrics.retries.labels(pool).inc()
        raise Unavailable(f"pool {pool}: no node answered")

    def _pick(self, pool: str, exclude: set[str]) -> NodeHandle | None:
        """The routable node with the fewest outstanding requests; ties rotate."""
        candidates = [n for n in self.cluster.pool_nodes(pool) if n.id not in exclude and n.routable()]
        if not candidates:
            return None
        candidates.sort(key=lambda n: n.index)
        turn = next(self._rr) % len(candidates)
        candidates = candidates[turn:] + candidates[:turn]
        candidates.sort(key=lambda n: n.inflight)  # stable: ties keep the rotated order
        for node in candidates:
            if node.breaker.acquire():
                return node
        return None

    async def _call(self, node: NodeHandle, req: TranslateRequest, priority: str, deadline: float, sink: PieceSink | None = None) -> Served:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ApiError(504, "deadline_exceeded", "The deadline passed before the request reached a node.")
        body = {
            "text": req.text, "source_lang": req.source_lang, "target_lang": req.target_lang,
            "rank": self.config.admission.classes[priority].rank, "budget_ms": remaining * 1000.0, "max_tokens": req.max_tokens,
        }
        assert node.client is not None
        node.inflight += 1
        self.metrics.inflight.labels(node.pool).inc()
        started = time.monotonic()
        try:
            timeout_s = min(remaining + 0.05, self.config.node_timeout_s)
            if sink is None:
                response = await node.client.post("/infer", json=body, timeout=timeout_s)
            else:
                response = await post_streaming(node.client, body, timeout_s=timeout_s, sink=sink)
        except httpx.ConnectTimeout:
            node.breaker.record(ok=False, duration_s=time.monotonic() - started)
            raise
        except httpx.TimeoutException:
            # Cut off by the request's own deadline: a slow call, not a failed one, so that
            # overload (short budgets, long queues) does not open the breakers of busy but
            # healthy nodes; a hung node still trips the breaker on its slow-call rate.
            node.breaker.record(ok=True, duration_s=time.monotonic() - started, slow=True)
            raise ApiError(504, "deadline_exceeded", f"Node {node.id} did not answer within the deadline.") from None
        except RETRYABLE:
            node.breaker.record(ok=False, duration_s=time.monotonic() - started)
            raise
        finally:
            node.inflight -= 1
            self.metrics.inflight.labels(node.pool).dec()
        return self._read_answer(node, response, time.monotonic() - started)

    def _read_answer(self, node: NodeHandle, response: httpx.Response, duration_s: float) -> Served:
        if response.status_code == 504:
            node.breaker.record(ok=True, duration_s=duration_s)
            raise ApiError(504, "deadline_exceeded", f"The deadline passed while the request waited on node {node.id}.")
        if response.status_code == 503 and _error_code(response) == "cannot_meet_deadline":
            node.breaker.record(ok=True, duration_s=duration_s)  # a healthy node shedding work it cannot finish
            raise Overloaded("cannot_meet_deadline", f"Node {node.id} could not finish the request before its deadline.", retry_after_s=1.0)
        if response.status_code != 200:
            node.breaker.record(ok=False, duration_s=duration_s)
            if response.status_code == 503:
                raise httpx.RemoteProtocolError(f"node {node.id} is not taking requests")  # retryable: try another node
            raise ApiError(503, "node_error", f"Node {node.id} failed with status {response.status_code}.", retry_after_s=1.0)
        node.breaker.record(ok=True, duration_s=duration_s)
        data = response.json()
        self.metrics.queue_seconds.labels(node.pool).observe(data["queue_ms"] / 1000.0)
        self.metrics.compute_seconds.labels(node.pool).observe(data["infer_ms"] / 1000.0)
        self.metrics.batch_size.labels(node.pool).observe(data["batch_size"])
        tier = self.config.pools[node.pool].model
        return Served(data["translation"], tier, node.id, float(data["queue_ms"]), float(data["infer_ms"]))

    def _fast_routable(self) -> bool:
        """Placement may move work to the fast pool only while that pool can take it."""
        pool = self.config.pool_for_tier("fast")
        return pool is not None and any(n.routable() for n in self.cluster.pool_nodes(pool))

    # ---- capacity ---------------------------------------------------------------------------
    def _capacity(self, pool: str) -> int:
        cfg = self.config.pools[pool]
        slots = self.config.admission.slots_per_node or 2 * cfg.max_batch_size
        return slots * sum(1 for n in self.cluster.pool_nodes(pool) if n.routable())

    async def poke_forever(self, interval_s: float = 0.1) -> None:
        """Capacity changes when nodes become ready or breakers close; hand out new slots."""
        while True:
            for dispatcher in self.dispatchers.values():
                dispatcher.dispatch()
                for name in self.config.admission.classes:
                    self.metrics.queue_depth.labels(dispatcher.pool, name).set(dispatcher.queued(name))
            await asyncio.sleep(interval_s)
