"""TokenBuckets and PoolDispatcher: rate limits, priority dispatch, bounded queues, early rejection."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

import pytest

from rushhour.reference_server.config import PriorityClass
from rushhour.reference_server.gateway.admission import Overloaded, PoolDispatcher, TokenBuckets

INF = math.inf


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _classes(**changes: dict[str, float]) -> dict[str, PriorityClass]:
    base: dict[str, dict[str, float]] = {
        "paid": dict(rank=0, max_queue=2, max_wait_ms=5000, rate_per_tenant=10, burst_per_tenant=3),
        "free": dict(rank=1, max_queue=2, max_wait_ms=5000, rate_per_tenant=10, burst_per_tenant=3),
        "batch": dict(rank=2, max_queue=2, max_wait_ms=5000, rate_per_tenant=10, burst_per_tenant=3),
    }
    for name, update in changes.items():
        base[name].update(update)
    return {name: PriorityClass(**values) for name, values in base.items()}


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


# ---- TokenBuckets ------------------------------------------------------------------------------


def test_token_buckets_allow_the_burst_then_say_how_long_to_wait() -> None:
    buckets = TokenBuckets(_classes(), clock=FakeClock())
    assert [buckets.take("t", "paid") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("t", "paid") == pytest.approx(0.1)  # one token at 10/s


def test_token_buckets_refill_at_the_rate() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(_classes(), clock=clock)
    for _ in range(3):
        buckets.take("t", "paid")
    clock.now = 0.05
    assert buckets.take("t", "paid") == pytest.approx(0.05)  # half a token is there
    clock.now = 0.1
    assert buckets.take("t", "paid") == 0.0


def test_token_buckets_refill_no_further_than_the_burst() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(_classes(), clock=clock)
    buckets.take("t", "paid")
    clock.now = 1000.0
    assert [buckets.take("t", "paid") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("t", "paid") > 0


def test_token_buckets_keep_tenants_and_classes_apart() -> None:
    buckets = TokenBuckets(_classes(), clock=FakeClock())
    for _ in range(3):
        buckets.take("a", "paid")
    assert buckets.take("a", "paid") > 0
    assert buckets.take("b", "paid") == 0.0
    assert buckets.take("a", "free") == 0.0


def test_token_buckets_bound_the_tenant_map_least_recently_used_first() -> None:
    buckets = TokenBuckets(_classes(), max_tenants=2, clock=FakeClock())
    for tenant in ("a", "b"):
        for _ in range(3):
            buckets.take(tenant, "paid")
    assert buckets.take("a", "paid") > 0  # touches "a": "b" is now the oldest
    buckets.take("c", "paid")  # evicts "b"
    assert buckets.take("a", "paid") > 0  # "a" kept its empty bucket
    assert buckets.take("b", "paid") == 0.0  # "b" was forgotten and starts full again


# ---- PoolDispatcher ----------------------------------------------------------------------------


def _dispatcher(capacity: Callable[[], int] = lambda: 1, clock: FakeClock | None = None, **kwargs: object) -> PoolDispatcher:
    classes = kwargs.pop("classes", None) or _classes()
    return PoolDispatcher("quality", classes, capacity, clock=clock or FakeClock(), **kwargs)  # type: ignore[arg-type]


def test_dispatcher_gives_a_free_slot_at_once() -> None:
    async def main() -> None:
        dispatcher = _dispatcher(lambda: 2)
        assert await dispatcher.acquire("batch", INF) == (0.0, 0)
        assert await dispatcher.acquire("paid", INF) == (0.0, 0)
        assert dispatcher.busy == 2

    asyncio.run(main())


def test_dispatcher_serves_waiters_highest_class_first() -> None:
    async def main() -> None:
        dispatcher = _dispatcher()
        await dispatcher.acquire("paid", INF)
        order: list[str] = []

        async def wait(name: str, priority: str) -> tuple[float, int]:
            result = await dispatcher.acquire(priority, INF)
            order.append(name)
            return result

        tasks = [
            asyncio.create_task(wait("batch", "batch")),
            asyncio.create_task(wait("free-1", "free")),
            asyncio.create_task(wait("paid", "paid")),
            asyncio.create_task(wait("free-2", "free")),
        ]
        await _settle()
        assert dispatcher.queued() == 4
        assert dispatcher.queued("free") == 2
        for expected in (["paid"], ["paid", "free-1"], ["paid", "free-1", "free-2"], ["paid", "free-1", "free-2", "batch"]):
            dispatcher.release()
            await _settle()
            assert order == expected
            assert dispatcher.busy == 1
        positions = [t.result()[1] for t in tasks]
        assert positions == [1, 1, 1, 2]

    asyncio.run(main())


def test_dispatcher_queues_a_newcomer_behind_waiters_of_its_class() -> None:
    async def main() -> None:
        capacity = [1]
        dispatcher = _dispatcher(lambda: capacity[0])
        await dispatcher.acquire("free", INF)
        waiter = asyncio.create_task(dispatcher.acquire("free", INF))
        await _settle()
        capacity[0] = 2  # a slot frees up without a dispatch yet
        newcomer = asyncio.create_task(dispatcher.acquire("free", INF))
        await _settle()
        assert not newcomer.done()  # it may not overtake the waiting request
        dispatcher.dispatch()
        await _settle()
        assert waiter.done() and not newcomer.done()
        dispatcher.release()
        await asyncio.wait_for(newcomer, timeout=5)

    asyncio.run(main())


def test_dispatcher_rejects_when_the_class_queue_is_full() -> None:
    async def main() -> None:
        dispatcher = _dispatcher()
        await dispatcher.acquire("paid", INF)
        waiters = [asyncio.create_task(dispatcher.acquire("paid", INF)) for _ in range(2)]
        await _settle()
        with pytest.raises(Overloaded) as info:
            await dispatcher.acquire("paid", INF)
        assert info.value.reason == "queue_full"
        assert info.value.retry_after_s > 0
        # Another class still has room in its own queue.
        other = asyncio.create_task(dispatcher.acquire("batch", INF))
        await _settle()
        assert dispatcher.queued("batch") == 1
        for task in [*waiters, other]:
            task.cancel()
        await asyncio.gather(*waiters, other, return_exceptions=True)

    asyncio.run(main())


def test_dispatcher_sheds_a_request_after_its_max_wait() -> None:
    async def main() -> None:
        dispatcher = _dispatcher(classes=_classes(batch={"max_wait_ms": 10}))
        await dispatcher.acquire("paid", INF)
        with pytest.raises(Overloaded) as info:
            await asyncio.wait_for(dispatcher.acquire("batch", INF), timeout=5)
        assert info.value.reason == "max_wait"
        assert dispatcher.queued("batch") == 0
        dispatcher.release()
        assert dispatcher.busy == 0  # the shed request did not take the slot

    asyncio.run(main())


def test_dispatcher_bounds_the_wait_by_the_deadline() -> None:
    async def main() -> None:
        clock = FakeClock(100.0)
        dispatcher = _dispatcher(clock=clock)
        await dispatcher.acquire("paid", INF)
        with pytest.raises(Overloaded) as info:
            await asyncio.wait_for(dispatcher.acquire("paid", deadline=100.01), timeout=5)
        assert info.value.reason == "max_wait"

    asyncio.run(main())


def test_dispatcher_cancelled_waiter_leaves_the_queue() -> None:
    async def main() -> None:
        dispatcher = _dispatcher()
        await dispatcher.acquire("paid", INF)
        gone = asyncio.create_task(dispatcher.acquire("paid", INF))
        kept = asyncio.create_task(dispatcher.acquire("paid", INF))
        await _settle()
        gone.cancel()
        await _settle()
        assert dispatcher.queued("paid") == 1
        dispatcher.release()
        await asyncio.wait_for(kept, timeout=5)
        assert dispatcher.busy == 1

    asyncio.run(main())


def test_dispatcher_has_no_estimate_before_enough_completions() -> None:
    async def main() -> None:
        clock = FakeClock()
        dispatcher = _dispatcher(clock=clock)
        for i in range(9):
            clock.now = 0.5 * (i + 1)
            await dispatcher.acquire("paid", INF)
            dispatcher.release(completed=True)
        assert dispatcher.service_rate() is None
        assert dispatcher.estimated_wait_s("paid") is None

    asyncio.run(main())


async def _ten_completions(dispatcher: PoolDispatcher, clock: FakeClock) -> None:
    for i in range(10):
        clock.now = 0.5 * (i + 1)
        await dispatcher.acquire("paid", INF)
        dispatcher.release(completed=True)


def test_dispatcher_rejects_early_when_the_estimated_wait_exceeds_the_deadline() -> None:
    async def main() -> None:
        clock = FakeClock()
        dispatcher = _dispatcher(clock=clock)
        await _ten_completions(dispatcher, clock)
        assert dispatcher.service_rate() == pytest.approx(10 / 4.5)
        await dispatcher.acquire("paid", INF)  # the one slot is busy now
        with pytest.raises(Overloaded) as info:
            await dispatcher.acquire("paid", deadline=clock.now + 0.2)
        assert info.value.reason == "early_reject"
        assert info.value.estimate_ms == pytest.approx(450.0)
        assert info.value.retry_after_s == 1
        assert dispatcher.queued() == 0
        # With enough time left it queues instead, and gets the slot on release.
        waiter = asyncio.create_task(dispatcher.acquire("paid", deadline=clock.now + 10))
        await _settle()
        assert dispatcher.queued("paid") == 1
        dispatcher.release()
        await asyncio.wait_for(waiter, timeout=5)

    asyncio.run(main())


def test_dispatcher_counts_waiters_ahead_in_the_estimate() -> None:
    async def main() -> None:
        clock = FakeClock()
        dispatcher = _dispatcher(clock=clock)
        await _ten_completions(dispatcher, clock)
        await dispatcher.acquire("paid", INF)
        waiter = asyncio.create_task(dispatcher.acquire("free", INF))
        await _settle()
        assert dispatcher.estimated_wait_s("paid") == pytest.approx(0.45)  # a free waiter is not ahead of paid
        assert dispatcher.estimated_wait_s("free") == pytest.approx(2 * 0.45)
        assert dispatcher.estimated_wait_s("batch") == pytest.approx(2 * 0.45)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)

    asyncio.run(main())


def test_dispatcher_without_early_reject_queues_anyway() -> None:
    async def main() -> None:
        clock = FakeClock()
        dispatcher = _dispatcher(clock=clock, early_reject=False)
        await _ten_completions(dispatcher, clock)
        await dispatcher.acquire("paid", INF)
        waiter = asyncio.create_task(dispatcher.acquire("paid", deadline=clock.now + 0.2))
        await _settle()
        assert dispatcher.queued("paid") == 1
        dispatcher.release()
        await asyncio.wait_for(waiter, timeout=5)

    asyncio.run(main())


def test_dispatcher_forgets_completions_older_than_the_rate_window() -> None:
    async def main() -> None:
        clock = FakeClock()
        dispatcher = _dispatcher(clock=clock)
        await _ten_completions(dispatcher, clock)
        clock.now += 60.0
        assert dispatcher.service_rate() is None

    asyncio.run(main())


def test_dispatcher_dispatch_honours_a_capacity_increase() -> None:
    async def main() -> None:
        capacity = [1]
        dispatcher = _dispatcher(lambda: capacity[0])
        await dispatcher.acquire("paid", INF)
        waiters = [asyncio.create_task(dispatcher.acquire(p, INF)) for p in ("free", "batch")]
        await _settle()
        capacity[0] = 3
        dispatcher.dispatch()
        await asyncio.wait_for(asyncio.gather(*waiters), timeout=5)
        assert dispatcher.busy == 3
        assert dispatcher.queued() == 0

    asyncio.run(main())


def test_dispatcher_does_not_dispatch_past_a_capacity_decrease() -> None:
    async def main() -> None:
        capacity = [2]
        dispatcher = _dispatcher(lambda: capacity[0])
        await dispatcher.acquire("paid", INF)
        await dispatcher.acquire("paid", INF)
        waiter = asyncio.create_task(dispatcher.acquire("paid", INF))
        await _settle()
        capacity[0] = 1
        dispatcher.release()  # busy 1 = the new capacity: nothing to hand out
        await _settle()
        assert not waiter.done()
        dispatcher.release()
        await asyncio.wait_for(waiter, timeout=5)
        assert dispatcher.busy == 1

    asyncio.run(main())


def test_dispatcher_sheds_a_slot_granted_too_late_for_the_deadline() -> None:
    async def main() -> None:
        clock = FakeClock()
        dispatcher = _dispatcher(clock=clock, early_reject=False)
        await dispatcher.acquire("paid", INF)
        dispatcher.release(completed=True, held_s=2.0)  # recent requests held a slot for 2 s
        assert dispatcher.expected_service_s() == 2.0
        await dispatcher.acquire("paid", INF)  # the slot is busy again
        waiter = asyncio.create_task(dispatcher.acquire("free", deadline=clock.now + 10.0))
        await _settle()
        clock.now += 9.0  # the slot frees with 1 s left: too late for a 2 s service
        dispatcher.release()
        with pytest.raises(Overloaded) as info:
            await waiter
        assert info.value.reason == "max_wait"
        assert dispatcher.busy == 0, "the late slot must be given back"

    asyncio.run(main())


def test_dispatcher_expects_each_class_to_hold_a_slot_as_long_as_its_own_requests_did() -> None:
    """A batch request granted a slot still waits at the node behind the paid ones, so its hold
    of 3 s says nothing of a paid request's 0.1 s: a paid request with 2 s to its deadline that
    finds every slot busy waits for one (and gets it 0.5 s later) instead of being shed at once
    because the pool's longest hold was past its deadline. A class with nothing completed yet
    takes the longest hold of any class."""
    async def main() -> None:
        clock = FakeClock()
        dispatcher = _dispatcher(clock=clock, early_reject=False)
        await dispatcher.acquire("batch", INF)
        dispatcher.release(completed=True, held_s=3.0, priority="batch")
        await dispatcher.acquire("paid", INF)
        dispatcher.release(completed=True, held_s=0.1, priority="paid")
        assert (dispatcher.expected_service_s("paid"), dispatcher.expected_service_s("batch")) == (0.1, 3.0)
        assert dispatcher.expected_service_s("free") == dispatcher.expected_service_s() == 3.0
        await dispatcher.acquire("batch", INF)  # every slot busy
        waiter = asyncio.create_task(dispatcher.acquire("paid", deadline=clock.now + 2.0))
        await _settle()
        assert not waiter.done(), "shed at once: the batch class's hold was taken for the paid one's"
        clock.now += 0.5
        dispatcher.release()
        assert (await asyncio.wait_for(waiter, timeout=5))[0] == 0.5
        assert dispatcher.busy == 1

    asyncio.run(main())
