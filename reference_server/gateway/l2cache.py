"""Shared L2 translation cache in Redis, beside the gateway's in-process L1.

Several gateways (or one gateway across restarts) share answers through Redis: on an L1 miss
the gateway asks L2, and a hit fills L1 and is answered as cached. New answers are written to
L2 in the background with the cache TTL, so a request never waits for a write.

Redis is an optimisation, never a dependency: every call has short socket timeouts and no
retries, every failure is counted (`rushhour_l2_errors_total`, status `cache.l2_errors`) and
answered as a miss, and after a failure L2 is skipped for a back-off (0.5 s, doubling to 5 s)
so a dead Redis costs at most one short timeout per back-off, not one per request.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable

from prometheus_client import Counter
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from rushhour.reference_server.gateway.cache import CachedTranslation, CacheKey
from rushhour.reference_server.gateway.metrics import Metrics

log = logging.getLogger("rushhour.gateway")
DEFAULT_TIMEOUT_S = 0.2
MIN_BACKOFF_S = 0.5
MAX_BACKOFF_S = 5.0
MAX_PENDING_WRITES = 1000
KEY_PREFIX = "rushhour:l2:"


def redis_key(key: CacheKey) -> str:
    """A fixed-length Redis key for an L1 key (the text itself may be long)."""
    digest = hashlib.sha256(json.dumps(key, ensure_ascii=False).encode()).hexdigest()
    return KEY_PREFIX + digest


class L2Cache:
    def __init__(
        self, url: str, *, ttl_s: float, metrics: Metrics, timeout_s: float = DEFAULT_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redis = Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0), health_check_interval=0,
        )
        self.ttl_ms = max(1, int(ttl_s * 1000))
        self._clock = clock
        self._skip_until = 0.0
        self._backoff_s = MIN_BACKOFF_S
        self._pending: set[asyncio.Task[None]] = set()
        self.hits = self.misses = self.errors = self.skipped = 0
        self._errors_metric = Counter("rushhour_l2_errors", "Failed calls to the shared L2 cache (Redis).", registry=metrics.registry)

    def available(self) -> bool:
        """False while backing off after a failure: callers treat L2 as a miss without a call."""
        return self._clock() >= self._skip_until

    async def get(self, key: CacheKey) -> CachedTranslation | None:
        if not self.available():
            self.skipped += 1
            return None
        try:
            raw = await self._redis.get(redis_key(key))
        except (RedisError, OSError) as exc:
            self._failed("get", exc)
            return None
        self._succeeded()
        if raw is None:
            self.misses += 1
            return None
        try:
            data = json.loads(raw)
            entry = CachedTranslation(str(data["translation"]), str(data["model"]), self._clock())
        except (ValueError, KeyError, TypeError):
            self.misses += 1  # not ours, or from an incompatible version: treat as absent
            return None
        self.hits += 1
        return entry

    async def put(self, key: CacheKey, translation: str, model: str) -> None:
        if not self.available():
            self.skipped += 1
            return
        value = json.dumps({"translation": translation, "model": model}, ensure_ascii=False)
        try:
            await self._redis.set(redis_key(key), value, px=self.ttl_ms)
        except (RedisError, OSError) as exc:
            self._failed("set", exc)
            return
        self._succeeded()

    def put_soon(self, key: CacheKey, translation: str, model: str) -> None:
        """Write in the background; when too many writes are pending, drop this one."""
        if len(self._pending) >= MAX_PENDING_WRITES or not self.available():
            self.skipped += 1
            return
        task = asyncio.get_running_loop().create_task(self.put(key, translation, model))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def flush(self) -> int:
        """Delete this cache's keys (and only those: the Redis may be shared); -1 when Redis failed."""
        try:
            keys = [key async for key in self._redis.scan_iter(match=KEY_PREFIX + "*", count=1000)]
            deleted = int(await self._redis.delete(*keys)) if keys else 0
        except (RedisError, OSError) as exc:
            self._failed("flush", exc)
            return -1
        self._succeeded()
        return deleted

    def _failed(self, op: str, exc: BaseException) -> None:
        self.errors += 1
        self._errors_metric.inc()
        if self.available():
            log.warning("L2 cache %s failed (%s: %s); skipping L2 for %.1f s", op, type(exc).__name__, exc, self._backoff_s)
            self._skip_until = self._clock() + self._backoff_s
            self._backoff_s = min(self._backoff_s * 2, MAX_BACKOFF_S)

    def _succeeded(self) -> None:
        self._backoff_s = MIN_BACKOFF_S

    def status(self) -> dict[str, object]:
        return {"l2_hits": self.hits, "l2_misses": self.misses, "l2_errors": self.errors, "l2_skipped": self.skipped,
                "l2_available": self.available()}

    async def close(self) -> None:
        for task in list(self._pending):
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
        await self._redis.aclose()
