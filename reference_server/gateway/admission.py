"""Admission control: per-tenant token buckets and per-pool priority dispatch.

A pool has a number of slots (requests it may have at its nodes at once). A request
takes a slot at once when one is free and nobody of its class or higher waits;
otherwise it waits in its class's bounded queue, at most the class's max wait. Higher
classes are dispatched first, so under overload lower classes wait longer and are shed
first. When the estimated wait already exceeds a request's deadline it is rejected at
once instead of queueing a request that would miss it anyway, and a request waits for a
slot only as long as still leaves it the pool's recent service time before its deadline:
a slot granted later would only carry the request to a node that misses the deadline (504).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from rushhour.reference_server.config import PriorityClass

RATE_WINDOW_S = 5.0
MIN_COMPLETIONS_FOR_ESTIMATE = 10
SERVICE_SAMPLES = 32


class Overloaded(Exception):
    """The request was shed; `reason` is queue_full, early_reject or max_wait."""

    def __init__(self, reason: str, message: str, *, retry_after_s: float, estimate_ms: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry_after_s = retry_after_s
        self.estimate_ms = estimate_ms


@dataclass
class _Bucket:
    tokens: float
    updated: float


class TokenBuckets:
    """One bucket per (tenant, priority class); the map of tenants is bounded (LRU)."""

    def __init__(self, classes: dict[str, PriorityClass], *, max_tenants: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._classes = classes
        self._buckets: OrderedDict[tuple[str, str], _Bucket] = OrderedDict()
        self._max = max_tenants
        self._clock = clock

    def take(self, tenant: str, priority: str) -> float:
        """Take one token; 0.0 when allowed, else the seconds until a token is there."""
        cls = self._classes[priority]
        now = self._clock()
        key = (tenant, priority)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(cls.burst_per_tenant, now)
            if len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            bucket.tokens = min(cls.burst_per_tenant, bucket.tokens + (now - bucket.updated) * cls.rate_per_tenant)
            bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / cls.rate_per_tenant


class PoolDispatcher:
    def __init__(
        self,
        pool: str,
        classes: dict[str, PriorityClass],
        capacity: Callable[[], int],
        *,
        early_reject: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pool = pool
        self._classes = classes
        self._capacity = capacity
        self._early_reject = early_reject
        self._clock = clock
        self.busy = 0
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {name: deque() for name in classes}
        self._order = sorted(classes, key=lambda name: classes[name].rank)
        self._completions: deque[float] = deque()
        self._held: dict[str | None, deque[float]] = {}
        """Per priority class, how long its last completed requests held their slot: a batch
        request granted a slot still waits at the node behind every higher class, so its hold says
        nothing of a paid request's."""

    def queued(self, priority: str | None = None) -> int:
        if priority is not None:
            return sum(1 for f in self._waiting[priority] if not f.done())
        return sum(self.queued(name) for name in self._order)

    def service_rate(self) -> float | None:
        """Completions per second over the last few seconds; None until there is enough data."""
        self._prune(self._clock())
        if len(self._completions) < MIN_COMPLETIONS_FOR_ESTIMATE:
            return None
        span = max(self._clock() - self._completions[0], 0.5)
        return len(self._completions) / span

    def expected_service_s(self, priority: str | None = None) -> float:
        """The longest that a recent completed request of `priority` held its slot; with none of that
        class completed yet (or no class given), the longest of any class; 0.0 before any."""
        own = self._held.get(priority) if priority is not None else None
        if own:
            return max(own)
        return max((max(held) for held in self._held.values() if held), default=0.0)

    def estimated_wait_s(self, priority: str) -> float | None:
        rate = self.service_rate()
        if rate is None:
            return None
        rank = self._classes[priority].rank
        ahead = sum(self.queued(name) for name in self._order if self._classes[name].rank <= rank)
        return (ahead + 1) / rate

    async def acquire(self, priority: str, deadline: float) -> tuple[float, int]:
        """Wait for a slot. Returns (seconds waited, queue position on arrival); raises Overloaded."""
        cls = self._classes[priority]
        if self._free_slot_for(priority):
            self.busy += 1
            return 0.0, 0
        position = self.queued(priority) + 1
        if self.queued(priority) >= cls.max_queue:
            raise Overloaded("queue_full", f'The "{priority}" queue of pool {self.pool} is full ({cls.max_queue}).', retry_after_s=1.0)
        now = self._clock()
        self._reject_early(priority, deadline - now)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[priority].append(future)
        timeout = min(cls.max_wait_ms / 1000.0, max(deadline - now - self.expected_service_s(priority), 0.0))
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout=timeout)
        except TimeoutError:
            if not (future.done() and not future.cancelled()):  # else: granted just as the wait ran out
                future.cancel()
                raise Overloaded("max_wait", f"No capacity in pool {self.pool} within {timeout * 1000:.0f} ms.",
                                 retry_after_s=1.0) from None
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # the slot was granted to a caller that went away
            future.cancel()
            raise
        if self._clock() + self.expected_service_s(priority) > deadline:
            self.release()  # granted too late to be served in time: shed here, not 504 at the node
            raise Overloaded("max_wait",
                             f"A slot of pool {self.pool} came too late to serve the request before its deadline.",
                             retry_after_s=1.0)
        return self._clock() - now, position

    def release(self, *, completed: bool = False, held_s: float | None = None, priority: str | None = None) -> None:
        self.busy = max(0, self.busy - 1)
        if completed:
            now = self._clock()
            self._completions.append(now)
            self._prune(now)
            if held_s is not None:
                self._held.setdefault(priority, deque(maxlen=SERVICE_SAMPLES)).append(held_s)
        self.dispatch()

    def dispatch(self) -> None:
        """Hand free slots to waiters, highest class first."""
        capacity = self._capacity()
        for name in self._order:
            queue = self._waiting[name]
            while queue and self.busy < capacity:
                future = queue.popleft()
                if not future.done():
                    self.busy += 1
                    future.set_result(None)
            while queue and queue[0].done():
                queue.popleft()

    def _free_slot_for(self, priority: str) -> bool:
        if self.busy >= self._capacity():
            return False
        rank = self._classes[priority].rank
        return not any(self.queued(name) for name in self._order if self._classes[name].rank <= rank)

    def _reject_early(self, priority: str, remaining_s: float) -> None:
        if not self._early_reject:
            return
        estimate = self.estimated_wait_s(priority)
        if estimate is not None and estimate > remaining_s:
            raise Overloaded(
                "early_reject",
                f"The estimated wait of {estimate * 1000:.0f} ms exceeds the deadline ({remaining_s * 1000:.0f} ms left).",
                retry_after_s=math.ceil(estimate),
                estimate_ms=round(estimate * 1000.0, 1),
            )

    def _prune(self, now: float) -> None:
        while self._completions and now - self._completions[0] > RATE_WINDOW_S:
            self._completions.popleft()
