"""ContinuousBatcher with a fake step model: admission at step boundaries, retirement, deadlines
mid-decode, the token budget, priority order, streaming, failures."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from rushhour.reference_server.batcher import CannotMeetDeadline, DeadlineExceeded
from rushhour.reference_server.continuous import ContinuousBatcher

Item = tuple[str, int]  # (name, decode steps)


@dataclass
class Call:
    retire: list[int]
    admit: list[str]
    rows: list[str]


@dataclass
class FakeSteps:
    """A step model over named rows: row `name` emits pieces `name0`, `name1`, ... and is done
    after its step count. With `gated`, every step waits for a permit from `release`."""

    gated: bool = False
    fail_on: str | None = None
    calls: list[Call] = field(default_factory=list)
    rows: list[list[object]] = field(default_factory=list)  # [name, steps, taken]
    permits: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def __call__(self, retire: Sequence[int], admit: Sequence[Item]) -> list[tuple[str, bool]]:
        self.rows = [row for i, row in enumerate(self.rows) if i not in set(retire)]
        self.rows += [[name, steps, 0] for name, steps in admit]
        self.calls.append(Call(list(retire), [name for name, _ in admit], [str(r[0]) for r in self.rows]))
        if self.gated:
            self.permits.acquire(timeout=10)
        if self.fail_on is not None and any(r[0] == self.fail_on for r in self.rows):
            self.rows = []
            raise RuntimeError("the model broke")
        out = []
        for row in self.rows:
            name, steps, taken = row
            row[2] = taken + 1  # type: ignore[operator]
            out.append((f"{name}{taken}" if taken < steps else "", taken + 1 >= steps))  # type: ignore[operator]
        return out

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self.permits.release()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _batcher(steps: FakeSteps, **kwargs: object) -> ContinuousBatcher[Item]:
    options: dict[str, object] = {"max_batch_size": 4, "max_tokens": 1000, "steps": lambda item: item[1]}
    options.update(kwargs)
    return ContinuousBatcher(steps, **options)  # type: ignore[arg-type]


async def _until(predicate: Callable[[], bool]) -> None:
    for _ in range(3000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition never became true")


def test_continuous_admits_a_new_request_at_the_next_step_boundary() -> None:
    async def main() -> None:
        steps = FakeSteps(gated=True)
        batcher = _batcher(steps)
        batcher.start()
        first = asyncio.create_task(batcher.submit(("a", 5)))
        await _until(lambda: len(steps.calls) == 1)
        second = asyncio.create_task(batcher.submit(("b", 2)))
        await asyncio.sleep(0.01)
        assert len(steps.calls) == 1  # the step in flight is not interrupted
        steps.release()
        await _until(lambda: len(steps.calls) == 2)
        assert steps.calls[1].admit == ["b"] and steps.calls[1].rows == ["a", "b"]
        steps.release(10)
        assert (await first)[0] == "a0a1a2a3a4" and (await second)[0] == "b0b1"
        await batcher.close()

    asyncio.run(main())


def test_continuous_retires_finished_rows_and_answers_them_at_once() -> None:
    async def main() -> None:
        steps = FakeSteps(gated=True)
        batcher = _batcher(steps)
        batcher.start()
        short = asyncio.create_task(batcher.submit(("s", 2)))
        long = asyncio.create_task(batcher.submit(("l", 6)))
        await _until(lambda: len(steps.calls) == 1)
        steps.release(2)
        output, info = await short
        assert output == "s0s1" and not long.done()  # answered while the long row still decodes
        await _until(lambda: len(steps.calls) == 3)
        assert steps.calls[2].retire == [0] and steps.calls[2].rows == ["l"]
        steps.release(10)
        assert (await long)[0] == "l0l1l2l3l4l5"
        assert info.size == 2
        await batcher.close()

    asyncio.run(main())


def test_continuous_drops_a_row_past_its_deadline_mid_decode() -> None:
    async def main() -> None:
        clock = FakeClock()
        steps = FakeSteps(gated=True)
        batcher = _batcher(steps, clock=clock)
        batcher.start()
        pieces: list[str] = []

        async def read() -> None:
            async for piece in batcher.stream(("d", 100), deadline=1.0):
                pieces.append(piece)

        reader = asyncio.create_task(read())
        other = asyncio.create_task(batcher.submit(("o", 4)))
        await _until(lambda: len(steps.calls) == 1)
        steps.release(2)
        await _until(lambda: len(steps.calls) == 3)
        clock.now = 2.0
        steps.release()
        with pytest.raises(DeadlineExceeded, match="mid-decode"):
            await reader
        assert pieces == ["d0", "d1", "d2"]
        steps.release(10)
        assert (await other)[0] == "o0o1o2o3"  # its batch-mate is unaffected
        assert any(call.retire == [0] and call.rows == ["o"] for call in steps.calls)
        assert batcher.stats.expired == 1
        await batcher.close()

    asyncio.run(main())


def test_continuous_token_budget_keeps_rows_free_for_short_texts() -> None:
    async def main() -> None:
        steps = FakeSteps(gated=True)
        batcher = _batcher(steps, max_tokens=10, cost=lambda item: 8 if item[0].startswith("doc") else 1)
        batcher.start()
        docs = [asyncio.create_task(batcher.submit((f"doc{i}", 3))) for i in range(3)]
        await _until(lambda: len(steps.calls) == 1)
        shorts = [asyncio.create_task(batcher.submit((f"s{i}", 1))) for i in range(2)]
        await _until(lambda: batcher.queue_depth == 4)
        steps.release()
        await _until(lambda: len(steps.calls) == 2)
        assert steps.calls[0].rows == ["doc0"]  # a second document would pass the budget
        assert steps.calls[1].admit == ["s0", "s1"]  # short texts still fit beside it
        steps.release(50)
        await asyncio.gather(*docs, *shorts)
        assert all(len(call.rows) <= 3 and sum(r.startswith("doc") for r in call.rows) <= 1 for call in steps.calls)
        await batcher.close()

    asyncio.run(main())


def test_continuous_runs_a_request_over_the_whole_budget_alone() -> None:
    async def main() -> None:
        batcher = _batcher(FakeSteps(), max_tokens=5, cost=lambda item: 50)
        batcher.start()
        assert (await batcher.submit(("huge", 2)))[0] == "huge0huge1"
        await batcher.close()

    asyncio.run(main())


def test_continuous_admits_by_priority_rank_then_deadline_within_max_batch_size() -> None:
    async def main() -> None:
        steps = FakeSteps(gated=True)
        batcher = _batcher(steps, max_batch_size=2, clock=FakeClock())
        batcher.start()
        blocker = asyncio.create_task(batcher.submit(("x", 1)))
        await _until(lambda: len(steps.calls) == 1)
        waiting = [
            asyncio.create_task(batcher.submit(("batch", 1), rank=2)),
            asyncio.create_task(batcher.submit(("free", 1), rank=1, deadline=50.0)),
            asyncio.create_task(batcher.submit(("paid", 1), rank=0)),
            asyncio.create_task(batcher.submit(("free-sooner", 1), rank=1, deadline=20.0)),
        ]
        await asyncio.sleep(0.01)
        steps.release(20)
        await asyncio.gather(blocker, *waiting)
        admitted = [name for call in steps.calls for name in call.admit]
        assert admitted == ["x", "paid", "free-sooner", "free", "batch"]
        assert max(len(call.rows) for call in steps.calls) <= 2
        await batcher.close()

    asyncio.run(main())


def test_continuous_stream_pieces_join_to_the_submitted_output() -> None:
    async def main() -> None:
        batcher = _batcher(FakeSteps())
        batcher.start()
        pieces = [piece async for piece in batcher.stream(("p", 4))]
        whole, _ = await batcher.submit(("p", 4))
        assert pieces == ["p0", "p1", "p2", "p3"] and "".join(pieces) == whole
        await batcher.close()

    asyncio.run(main())


def test_continuous_model_failure_fails_its_rows_and_the_next_requests_run() -> None:
    async def main() -> None:
        batcher = _batcher(FakeSteps(fail_on="bad"))
        batcher.start()
        results = await asyncio.gather(batcher.submit(("bad", 3)), batcher.submit(("mate", 3)), return_exceptions=True)
        assert all(isinstance(r, RuntimeError) for r in results)
        assert (await batcher.submit(("good", 2)))[0] == "good0good1"
        await batcher.close()

    asyncio.run(main())


def test_continuous_sheds_a_request_that_cannot_finish_before_its_deadline() -> None:
    async def main() -> None:
        clock = FakeClock()

        def slow(retire: Sequence[int], admit: Sequence[Item]) -> list[tuple[str, bool]]:
            clock.now += 0.01  # every step takes 10 ms
            return fake(retire, admit)

        fake = FakeSteps()
        batcher = _batcher(slow, clock=clock)  # type: ignore[arg-type]
        batcher.start()
        await batcher.submit(("warm", 30))
        with pytest.raises(CannotMeetDeadline, match="ms are left"):
            await batcher.submit(("long", 100), deadline=clock.now + 0.2)
        assert batcher.stats.cannot_meet == 1
        await batcher.close()

    asyncio.run(main())


def test_continuous_a_caller_that_goes_away_leaves_at_the_next_step() -> None:
    async def main() -> None:
        steps = FakeSteps(gated=True)
        batcher = _batcher(steps)
        batcher.start()
        gone = asyncio.create_task(batcher.submit(("gone", 50)))
        await _until(lambda: len(steps.calls) == 1)
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)  # the caller has gone
        steps.release(3)
        await _until(lambda: len(steps.calls) >= 2)
        assert steps.calls[1].retire == [0] and steps.calls[1].rows == []
        await batcher.close()

    asyncio.run(main())
