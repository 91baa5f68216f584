"""DynamicBatcher: batch formation, the batch window, ordering, deadlines, failures, shutdown."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

import pytest

from rushhour.reference_server.batcher import CannotMeetDeadline, DeadlineExceeded, DynamicBatcher, QueueFull


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Recorder:
    """A run_batch that records every batch it sees and can be held on a gate."""

    def __init__(self, *, gated: bool = False, fn: Callable[[Sequence[str]], list[str]] | None = None) -> None:
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.entered = threading.Event()
        self._gated = gated
        self._fn = fn or (lambda items: [item.upper() for item in items])
        if not gated:
            self.gate.set()

    def __call__(self, items: Sequence[str]) -> list[str]:
        self.batches.append(list(items))
        self.entered.set()
        self.gate.wait(timeout=10)
        return self._fn(items)


async def _until(predicate: Callable[[], bool]) -> None:
    for _ in range(2000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition never became true")


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def _hold_worker(batcher: DynamicBatcher[str, str], recorder: Recorder) -> asyncio.Task[object]:
    """Submit a first request and wait until the worker is computing it (held on the gate)."""
    blocker = asyncio.create_task(batcher.submit("blocker"))
    await _until(recorder.entered.is_set)
    return blocker


def test_batcher_forms_batches_up_to_max_batch_size() -> None:
    async def main() -> tuple[list[list[str]], list[int]]:
        recorder = Recorder()
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=4, max_queue_delay_ms=20)
        batcher.start()
        try:
            results = await asyncio.gather(*(batcher.submit(f"r{i}") for i in range(10)))
        finally:
            await batcher.close()
        assert [out for out, _ in results] == [f"R{i}" for i in range(10)]
        return recorder.batches, [info.size for _, info in results]

    batches, sizes = asyncio.run(main())
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sizes == [4] * 8 + [2] * 2


def test_batcher_serves_a_lone_request_after_the_queue_delay() -> None:
    async def main() -> None:
        recorder = Recorder()
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=8, max_queue_delay_ms=5)
        batcher.start()
        try:
            out, info = await asyncio.wait_for(batcher.submit("alone"), timeout=5)
        finally:
            await batcher.close()
        assert out == "ALONE"
        assert info.size == 1
        assert batcher.stats.batches == 1 and batcher.stats.items == 1

    asyncio.run(main())


def test_batcher_times_the_window_from_the_first_request() -> None:
    clock = FakeClock()

    async def main() -> None:
        recorder = Recorder()
        # A window of 60 s: only the (fake) clock can close it within this test.
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=8, max_queue_delay_ms=60_000, clock=clock)
        batcher.start()
        try:
            first = asyncio.create_task(batcher.submit("a"))
            await _settle()
            assert recorder.batches == []
            clock.now = 61.0  # the window of "a" is over; "b" has just arrived
            second = asyncio.create_task(batcher.submit("b"))
            (_, info_a), (_, info_b) = await asyncio.wait_for(asyncio.gather(first, second), timeout=5)
        finally:
            await batcher.close()
        assert recorder.batches == [["a", "b"]]
        assert info_a.queue_ms == pytest.approx(61_000.0)
        assert info_b.queue_ms == pytest.approx(0.0)

    asyncio.run(main())


def test_batcher_orders_by_rank_then_deadline() -> None:
    clock = FakeClock()

    async def main() -> None:
        recorder = Recorder(gated=True)
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=3, max_queue_delay_ms=0, clock=clock)
        batcher.start()
        try:
            blocker = await _hold_worker(batcher, recorder)
            queued = [
                asyncio.create_task(batcher.submit("batch", rank=2)),
                asyncio.create_task(batcher.submit("paid-late", rank=0, deadline=200.0)),
                asyncio.create_task(batcher.submit("free", rank=1, deadline=50.0)),
                asyncio.create_task(batcher.submit("paid-early", rank=0, deadline=100.0)),
                asyncio.create_task(batcher.submit("paid-none", rank=0)),
            ]
            await _settle()
            recorder.gate.set()
            await asyncio.wait_for(asyncio.gather(blocker, *queued), timeout=5)
        finally:
            recorder.gate.set()
            await batcher.close()
        assert recorder.batches == [["blocker"], ["paid-early", "paid-late", "paid-none"], ["free", "batch"]]

    asyncio.run(main())


def test_batcher_answers_expired_requests_without_computing_them() -> None:
    clock = FakeClock()

    async def main() -> None:
        recorder = Recorder(gated=True)
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=4, max_queue_delay_ms=0, clock=clock)
        batcher.start()
        try:
            blocker = await _hold_worker(batcher, recorder)
            doomed = asyncio.create_task(batcher.submit("doomed", deadline=5.0))
            fine = asyncio.create_task(batcher.submit("fine", deadline=50.0))
            await _settle()
            clock.now = 10.0  # "doomed" expires while the worker is busy
            recorder.gate.set()
            with pytest.raises(DeadlineExceeded):
                await asyncio.wait_for(doomed, timeout=5)
            assert (await asyncio.wait_for(fine, timeout=5))[0] == "FINE"
            await blocker
        finally:
            recorder.gate.set()
            await batcher.close()
        assert recorder.batches == [["blocker"], ["fine"]]
        assert batcher.stats.expired == 1

    asyncio.run(main())


def test_batcher_skips_a_caller_that_went_away() -> None:
    async def main() -> None:
        recorder = Recorder(gated=True)
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=4, max_queue_delay_ms=0)
        batcher.start()
        try:
            blocker = await _hold_worker(batcher, recorder)
            gone = asyncio.create_task(batcher.submit("gone"))
            kept = asyncio.create_task(batcher.submit("kept"))
            await _settle()
            gone.cancel()
            recorder.gate.set()
            assert (await asyncio.wait_for(kept, timeout=5))[0] == "KEPT"
            await blocker
        finally:
            recorder.gate.set()
            await batcher.close()
        assert recorder.batches == [["blocker"], ["kept"]]

    asyncio.run(main())


def test_batcher_sends_a_run_batch_error_to_every_caller_and_keeps_serving() -> None:
    failing = {"on": True}

    def run_batch(items: Sequence[str]) -> list[str]:
        if failing["on"]:
            raise ValueError("model exploded")
        return list(items)

    async def main() -> None:
        batcher: DynamicBatcher[str, str] = DynamicBatcher(run_batch, max_batch_size=3, max_queue_delay_ms=20)
        batcher.start()
        try:
            results = await asyncio.wait_for(
                asyncio.gather(*(batcher.submit(x) for x in "abc"), return_exceptions=True), timeout=5
            )
            assert all(isinstance(r, ValueError) and str(r) == "model exploded" for r in results)
            failing["on"] = False
            out, _ = await asyncio.wait_for(batcher.submit("after"), timeout=5)
            assert out == "after"
        finally:
            await batcher.close()

    asyncio.run(main())


def test_batcher_fails_every_caller_when_run_batch_returns_the_wrong_count() -> None:
    async def main() -> None:
        batcher: DynamicBatcher[str, str] = DynamicBatcher(lambda items: ["only one"], max_batch_size=3, max_queue_delay_ms=20)
        batcher.start()
        try:
            results = await asyncio.wait_for(
                asyncio.gather(*(batcher.submit(x) for x in "abc"), return_exceptions=True), timeout=5
            )
        finally:
            await batcher.close()
        assert len(results) == 3
        for r in results:
            assert isinstance(r, RuntimeError)
            assert "1 results for a batch of 3" in str(r)

    asyncio.run(main())


def test_batcher_raises_queue_full_when_the_queue_is_at_its_limit() -> None:
    async def main() -> None:
        batcher: DynamicBatcher[str, str] = DynamicBatcher(lambda items: list(items), max_batch_size=4, max_queue_delay_ms=0, max_queue=2)
        # Not started: requests stay queued.
        pending = [asyncio.create_task(batcher.submit(x)) for x in "ab"]
        await _settle()
        assert batcher.queue_depth == 2
        with pytest.raises(QueueFull):
            await batcher.submit("c")
        await batcher.close()
        results = await asyncio.gather(*pending, return_exceptions=True)
        assert all(isinstance(r, RuntimeError) for r in results)

    asyncio.run(main())


def test_batcher_rejects_a_max_batch_size_below_one() -> None:
    with pytest.raises(ValueError, match="max_batch_size"):
        DynamicBatcher(lambda items: list(items), max_batch_size=0, max_queue_delay_ms=1)


def test_batcher_close_fails_queued_requests_and_stops_the_task() -> None:
    async def main() -> None:
        recorder = Recorder(gated=True)
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=1, max_queue_delay_ms=0)
        batcher.start()
        task = batcher._task
        assert task is not None
        try:
            blocker = await _hold_worker(batcher, recorder)
            queued = [asyncio.create_task(batcher.submit(x)) for x in "xy"]
            await _settle()
            await batcher.close()
            results = await asyncio.wait_for(asyncio.gather(*queued, return_exceptions=True), timeout=5)
        finally:
            recorder.gate.set()
        assert all(isinstance(r, RuntimeError) and "closed" in str(r) for r in results)
        assert task.done()
        assert batcher.queue_depth == 0
        assert recorder.batches == [["blocker"]]
        blocker.cancel()

    asyncio.run(main())


def test_batcher_close_fails_the_batch_being_computed() -> None:
    async def main() -> None:
        recorder = Recorder(gated=True)
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=1, max_queue_delay_ms=0)
        batcher.start()
        try:
            blocker = await _hold_worker(batcher, recorder)
            await batcher.close()
            with pytest.raises(RuntimeError):
                await asyncio.wait_for(blocker, timeout=0.5)
        finally:
            recorder.gate.set()

    asyncio.run(main())


def test_batcher_submit_after_close_fails() -> None:
    async def main() -> None:
        batcher: DynamicBatcher[str, str] = DynamicBatcher(lambda items: list(items), max_batch_size=1, max_queue_delay_ms=0)
        batcher.start()
        await batcher.close()
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(batcher.submit("late"), timeout=0.3)

    asyncio.run(main())


def test_batcher_sheds_a_request_whose_batch_cannot_finish_before_its_deadline() -> None:
    """Batch time is learned per unit of the longest item's cost; a request with less time left
    than its batch would take is answered CannotMeetDeadline and never computed."""
    clock = FakeClock()

    def run(items: Sequence[str]) -> list[str]:
        clock.now += 0.1 * max(len(i) for i in items)  # 0.1 s per character of the longest item
        return [i.upper() for i in items]

    recorder = Recorder(fn=run)

    async def main() -> None:
        batcher: DynamicBatcher[str, str] = DynamicBatcher(recorder, max_batch_size=1, max_queue_delay_ms=0, clock=clock, cost=len)
        batcher.start()
        try:
            for _ in range(3):
                await batcher.submit("aaaa")
            assert batcher.expected_batch_s(10) == pytest.approx(1.0)
            with pytest.raises(CannotMeetDeadline):
                await batcher.submit("b" * 10, deadline=clock.now + 0.5)
            output, _ = await batcher.submit("cc", deadline=clock.now + 0.5)
            assert output == "CC"
            assert batcher.stats.cannot_meet == 1 and batcher.stats.expired == 0
        finally:
            await batcher.close()

    asyncio.run(main())
    assert ["b" * 10] not in recorder.batches
