"""Dynamic batching for one model replica.

A small primitive: a priority queue of waiting requests, a wake-up event, a batch
window timed from the oldest waiting request, one future per caller, and a check
that the model returned one result per input. Requests are taken by priority rank,
then by deadline; one whose deadline has passed is answered `DeadlineExceeded`
before compute and is never computed.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rushhour.reference_server.aio import cancel_and_wait

MIN_BATCHES_FOR_ESTIMATE = 3
COST_EWMA_ALPHA = 0.2

In = TypeVar("In")
Out = TypeVar("Out")


class DeadlineExceeded(Exception):
    """The request's deadline passed while it waited; it was not computed."""


class QueueFull(Exception):
    """The batcher's bounded queue is full."""


class CannotMeetDeadline(Exception):
    """The request's deadline has not passed, but it would before a batch could finish: it is
    shed before compute (a 503 to retry elsewhere or later), rather than computed for nothing."""


@dataclass(order=True)
class _Waiting(Generic[In, Out]):
    rank: int
    deadline: float
    seq: int
    arrived: float = field(compare=False)
    item: In = field(compare=False)
    future: asyncio.Future[tuple[Out, BatchInfo]] = field(compare=False)


@dataclass(frozen=True)
class BatchInfo:
    """What a caller learns about the batch its request ran in."""

    size: int
    queue_ms: float
    infer_ms: float


@dataclass
class BatcherStats:
    batches: int = 0
    items: int = 0
    expired: int = 0
    cannot_meet: int = 0
    last_batch_size: int = 0
    busy_s: float = 0.0


class DynamicBatcher(Generic[In, Out]):
    """Collects requests into batches of at most `max_batch_size` for a blocking model call.

    `run_batch` runs on one worker thread, off the event loop, so the loop keeps
    accepting requests while the model computes.
    """

    def __init__(
        self,
        run_batch: Callable[[Sequence[In]], list[Out]],
        *,
        max_batch_size: int,
        max_queue_delay_ms: float,
        max_queue: int = 1024,
        clock: Callable[[], float] = time.monotonic,
        cost: Callable[[In], float] | None = None,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be at least 1, not {max_batch_size}.")
        self._run_batch = run_batch
        self.max_batch_size = max_batch_size
        self._delay_s = max_queue_delay_ms / 1000.0
        self._max_queue = max_queue
        self._clock = clock
        self._heap: list[_Waiting[In, Out]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batcher")
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._cost: Callable[[In], float] = cost or (lambda item: 1.0)
        self._s_per_cost = 0.0
        self.stats = BatcherStats()

    @property
    def queue_depth(self) -> int:
        return len(self._heap)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="batcher")

    async def close(self) -> None:
        self._closed = True
        await cancel_and_wait(self._task)
        self._task = None
        for waiting in self._heap:
            if not waiting.future.done():
                waiting.future.set_exception(RuntimeError("The batcher was closed before this request ran."))
        self._heap.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def submit(self, item: In, *, rank: int = 0, deadline: float = float("inf")) -> tuple[Out, BatchInfo]:
        """Queue one request; resolves with its output and the batch it ran in."""
        if self._closed:
            raise RuntimeError("The batcher is closed.")
        if len(self._heap) >= self._max_queue:
            raise QueueFull(f"The node queue holds {len(self._heap)} requests, its limit.")
        future: asyncio.Future[tuple[Out, BatchInfo]] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, _Waiting(rank, deadline, next(self._seq), self._clock(), item, future))
        self._wake.set()
        return await future

    async def _loop(self) -> None:
        while True:
            await self._wait_for_batch()
            batch = self._take_batch()
            if batch:
                await self._compute(batch)

    async def _wait_for_batch(self) -> None:
        while not self._heap:
            self._wake.clear()
            await self._wake.wait()
        oldest = min(w.arrived for w in self._heap)
        while len(self._heap) < self.max_batch_size:
            remaining = oldest + self._delay_s - self._clock()
            if remaining <= 0:
                return
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=remaining)
            except TimeoutError:
                return

    def expected_batch_s(self, max_cost: float) -> float | None:
        """Compute time of a batch whose costliest item costs `max_cost` (batch time grows with
        its longest input), from a moving average; None until a few batches have run."""
        if self.stats.batches < MIN_BATCHES_FOR_ESTIMATE:
            return None
        return self._s_per_cost * max_cost

    def _take_batch(self) -> list[_Waiting[In, Out]]:
        now = self._clock()
        batch: list[_Waiting[In, Out]] = []
        max_cost = 0.0
        while self._heap and len(batch) < self.max_batch_size:
            waiting = heapq.heappop(self._heap)
            if waiting.future.done():
                continue  # the caller went away
            if waiting.deadline <= now:
                self.stats.expired += 1
                waiting.future.set_exception(DeadlineExceeded("The deadline passed while the request was queued."))
                continue
            cost = max(max_cost, self._cost(waiting.item))
            needed = self.expected_batch_s(cost)
            if needed is not None and waiting.deadline - now < needed:
                self.stats.cannot_meet += 1
                waiting.future.set_exception(CannotMeetDeadline(
                    f"{(waiting.deadline - now) * 1000:.0f} ms are left and a batch takes about {needed * 1000:.0f} ms."))
                continue
            max_cost = cost
            batch.append(waiting)
        return batch

    async def _compute(self, batch: list[_Waiting[In, Out]]) -> None:
        started = self._clock()
        loop = asyncio.get_running_loop()
        try:
            outputs = await loop.run_in_executor(self._executor, self._run_batch, [w.item for w in batch])
            if len(outputs) != len(batch):
                raise RuntimeError(f"The model returned {len(outputs)} results for a batch of {len(batch)}.")
        except asyncio.CancelledError:
            for waiting in batch:
                if not waiting.future.done():
                    waiting.future.set_exception(RuntimeError("The batcher was closed while this request ran."))
            raise
        except Exception as exc:  # noqa: BLE001 - every waiting caller learns of the failure
            for waiting in batch:
                if not waiting.future.done():
                    waiting.future.set_exception(exc)
            return
        finished = self._clock()
        self._record(len(batch), finished - started)
        self._learn_cost(max(self._cost(w.item) for w in batch), finished - started)
        infer_ms = (finished - started) * 1000.0
        for waiting, output in zip(batch, outputs, strict=True):
            if not waiting.future.done():
                info = BatchInfo(len(batch), (started - waiting.arrived) * 1000.0, infer_ms)
                waiting.future.set_result((output, info))

    def _learn_cost(self, max_cost: float, busy_s: float) -> None:
        per_cost = busy_s / max(max_cost, 1e-9)
        first = self.stats.batches <= 1
        self._s_per_cost = per_cost if first else (1 - COST_EWMA_ALPHA) * self._s_per_cost + COST_EWMA_ALPHA * per_cost

    def _record(self, size: int, busy_s: float) -> None:
        self.stats.batches += 1
        self.stats.items += size
        self.stats.last_batch_size = size
        self.stats.busy_s += busy_s
