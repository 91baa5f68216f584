"""Continuous (iteration-level) batching for one model replica, as in Orca and vLLM.

A decode loop over an active set of rows. At every step boundary it retires the rows that
finished (already answered), were cancelled or passed their deadline (answered
`DeadlineExceeded` mid-decode), then admits waiting requests by priority rank, then deadline,
while the set has fewer than `max_batch_size` rows and their source tokens fit `max_tokens`
(a burst of documents cannot take every row from short texts); one request larger than the
whole budget runs when nothing else does. A request that cannot finish before its deadline at
the recent step time is shed before compute (`CannotMeetDeadline`). The decode loop (plan,
step, plan, ...) runs on its own thread, so steps follow one another without waiting for the
event loop between them (on a busy machine that wait, once per output token, cost more than
the step); the event loop only queues requests and hands out what each step produced: the
pieces reach each caller at once (`stream`), and a finished row is answered the moment its
last piece is out. Requests queued in one turn of the event loop are admitted together.

`run_step(retire, admit)` is the model's side: remove the rows at those indexes, append the
admitted items as new rows, run one decode step over every row, and return one `(piece, done)`
per row in order; on failure it must leave no rows behind. A new row's encoder runs in the step
that admits it or, with chunked prefill (`model.prefill`), a bounded chunk per step, its pieces
empty until it is encoded; either way the row holds its place here from admission on.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import statistics
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rushhour.reference_server.batcher import (
    BatcherStats,
    BatchInfo,
    CannotMeetDeadline,
    DeadlineExceeded,
    QueueFull,
)

In = TypeVar("In")
StepFn = Callable[[Sequence[int], Sequence[In]], list[tuple[str, bool]]]

MIN_STEPS_FOR_ESTIMATE = 20
RECENT_STEPS = 64
SWEEP_INTERVAL_S = 0.02
Stepped = list[tuple[str, bool]]


@dataclass(eq=False)
class _Row(Generic[In]):
    item: In
    rank: int
    deadline: float
    arrived: float
    cost: float
    pieces: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    future: asyncio.Future[tuple[str, BatchInfo]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    text: list[str] = field(default_factory=list)
    admitted: float = 0.0
    steps: int = 0
    rows_seen: int = 0
    finished: bool = False

    @property
    def gone(self) -> bool:
        """Answered, failed or dropped; the decode thread reads it too (one state read)."""
        return self.future.done()

    def drop(self) -> None:
        """The caller went away: the row leaves at the next step boundary."""
        if not self.future.done():
            self.future.cancel()
        self.pieces.put_nowait(None)

    def fail(self, exc: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(exc)
        self.pieces.put_nowait(None)

    def finish(self, now: float) -> None:
        self.finished = True
        if not self.future.done():
            info = BatchInfo(round(self.rows_seen / max(self.steps, 1)), (self.admitted - self.arrived) * 1000.0,
                             (now - self.admitted) * 1000.0)
            self.future.set_result(("".join(self.text), info))
        self.pieces.put_nowait(None)


@dataclass(order=True)
class _Waiting(Generic[In]):
    rank: int
    deadline: float
    seq: int
    row: _Row[In] = field(compare=False)


class ContinuousBatcher(Generic[In]):
    """Admits requests into a running decode at step boundaries; see the module docstring."""

    def __init__(self, run_step: StepFn[In], *, max_batch_size: int, max_tokens: float, max_queue: int = 1024,
                 clock: Callable[[], float] = time.monotonic, cost: Callable[[In], float] | None = None,
                 steps: Callable[[In], int] | None = None) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be at least 1, not {max_batch_size}.")
        if max_tokens <= 0:
            raise ValueError(f"The token budget must be positive, not {max_tokens}.")
        self._run_step = run_step
        self.max_batch_size = max_batch_size
        self.max_tokens = max_tokens
        self._max_queue = max_queue
        self._clock = clock
        self._cost: Callable[[In], float] = cost or (lambda item: 1.0)
        self._steps: Callable[[In], int] = steps or (lambda item: 1)
        self._heap: list[_Waiting[In]] = []
        self._rows: list[_Row[In]] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()  # the waiting heap: pushed on the event loop, popped by the decode thread
        self._work = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._recent: deque[float] = deque(maxlen=RECENT_STEPS)
        self._swept = 0.0
        self.stats = BatcherStats()

    @property
    def queue_depth(self) -> int:
        return len(self._heap)

    @property
    def active_rows(self) -> int:
        return len(self._rows)

    @property
    def active_tokens(self) -> float:
        return sum(row.cost for row in self._rows)

    def start(self) -> None:
        if self._thread is None:
            self._loop = asyncio.get_running_loop()
            self._thread = threading.Thread(target=self._run, name="continuous-batcher", daemon=True)
            self._thread.start()

    async def close(self) -> None:
        """Stop the decode thread after its step in flight and fail every request not answered."""
        with self._lock:
            self._closed = True
            rows = [w.row for w in self._heap] + self._rows
            self._heap.clear()
        self._work.set()
        for row in rows:
            row.fail(RuntimeError("The batcher was closed before this request finished."))

    def enqueue(self, item: In, *, rank: int = 0, deadline: float = float("inf")) -> _Row[In]:
        """Queue one request; its row carries the pieces and the final answer."""
        if self._closed:
            raise RuntimeError("The batcher is closed.")
        if len(self._heap) >= self._max_queue:
            raise QueueFull(f"The node queue holds {len(self._heap)} requests, its limit.")
        row = _Row(item, rank, deadline, self._clock(), self._cost(item))
        with self._lock:
            heapq.heappush(self._heap, _Waiting(rank, deadline, next(self._seq), row))
        asyncio.get_running_loop().call_soon(self._work.set)  # after the rest of this turn's requests
        return row

    async def submit(self, item: In, *, rank: int = 0, deadline: float = float("inf")) -> tuple[str, BatchInfo]:
        """Queue one request; resolves with its whole output and what its decode was like."""
        row = self.enqueue(item, rank=rank, deadline=deadline)
        try:
            return await asyncio.shield(row.future)
        finally:
            row.drop()  # no-op once answered; else the row leaves at the next step

    async def stream(self, item: In, *, rank: int = 0, deadline: float = float("inf")) -> AsyncIterator[str]:
        """Queue one request and yield its pieces as they are decoded; a failure is raised after
        the pieces that came before it. Closing the iterator early drops the row."""
        row = self.enqueue(item, rank=rank, deadline=deadline)
        try:
            while (piece := await row.pieces.get()) is not None:
                yield piece
            await row.future
        finally:
            row.drop()

    def expected_s(self, item: In) -> float | None:
        """Decode time of `item` at the median of the recent steps' times (one slow step, such as
        a cold node's first, which loads the model, does not skew it); None until enough steps ran."""
        if self.stats.batches < MIN_STEPS_FOR_ESTIMATE:
            return None
        return statistics.median(self._recent) * max(self._steps(item), 1)

    def _run(self) -> None:
        """The decode thread: wait for work, then plan and step until nothing runs or waits."""
        while True:
            with self._lock:
                if self._closed:
                    return
                idle = not self._rows and not self._heap
                if idle:
                    self._work.clear()
                else:
                    retire, admit = self._plan()
            if idle:
                self._work.wait()
            elif not self._step(retire, admit):
                return

    def _plan(self) -> tuple[list[int], list[_Row[In]]]:
        """At a step boundary: which rows leave (by index), which waiting requests join."""
        now = self._clock()
        retire: list[int] = []
        for index, row in enumerate(self._rows):
            if row.finished or row.gone:
                retire.append(index)
            elif row.deadline <= now:
                self.stats.expired += 1
                retire.append(index)
                self._post(row.fail, DeadlineExceeded(f"The deadline passed after {row.steps} of the request's "
                                                      f"{self._steps(row.item)} decode steps; it was dropped mid-decode."))
        leaving = set(retire)
        self._rows = [row for index, row in enumerate(self._rows) if index not in leaving]
        self._sweep(now)
        return retire, self._admit(now)

    def _admit(self, now: float) -> list[_Row[In]]:
        used = self.active_tokens
        admitted: list[_Row[In]] = []
        skipped: list[_Waiting[In]] = []
        while self._heap and len(self._rows) + len(admitted) < self.max_batch_size:
            waiting = heapq.heappop(self._heap)
            row = waiting.row
            if row.gone or not self._admissible(row, now):
                continue
            if used + row.cost > self.max_tokens and (used > 0 or admitted):
                skipped.append(waiting)  # over the budget now; smaller requests behind it may fit
                continue
            used += row.cost
            row.admitted = now
            admitted.append(row)
        for waiting in skipped:
            heapq.heappush(self._heap, waiting)
        self._rows.extend(admitted)
        return admitted

    def _admissible(self, row: _Row[In], now: float) -> bool:
        if row.deadline <= now:
            self.stats.expired += 1
            self._post(row.fail, DeadlineExceeded("The deadline passed while the request was queued."))
            return False
        needed = self.expected_s(row.item)
        if needed is not None and row.deadline - now < needed:
            self.stats.cannot_meet += 1
            self._post(row.fail, CannotMeetDeadline(f"{(row.deadline - now) * 1000:.0f} ms are left and its decode "
                                                    f"takes about {needed * 1000:.0f} ms."))
            return False
        return True

    def _sweep(self, now: float) -> None:
        """Answer waiting requests whose deadline passed (504) without waiting for a free row."""
        if now - self._swept < SWEEP_INTERVAL_S:
            return
        self._swept = now
        kept = [w for w in self._heap if not w.row.gone and w.row.deadline > now]
        if len(kept) == len(self._heap):
            return
        for waiting in self._heap:
            if not waiting.row.gone and waiting.row.deadline <= now:
                self.stats.expired += 1
                self._post(waiting.row.fail, DeadlineExceeded("The deadline passed while the request was queued."))
        heapq.heapify(kept)
        self._heap = kept

    def _step(self, retire: list[int], admit: list[_Row[In]]) -> bool:
        """One step on the decode thread; what it produced goes to the event loop. False once
        the batcher is closed (or its event loop is gone): the thread then ends."""
        rows, started = list(self._rows), self._clock()
        try:
            pieces = self._run_step(retire, [r.item for r in admit])
            if len(pieces) != len(rows):
                raise RuntimeError(f"The model returned {len(pieces)} pieces for {len(rows)} rows.")
        except Exception as exc:  # noqa: BLE001 (every row in the step learns of the failure; the model kept none)
            with self._lock:
                self._rows = []
            return self._post(_fail_rows, rows, exc)
        finished = self._clock()
        self._record(len(pieces), finished - started)
        for row, (_, done) in zip(rows, pieces, strict=True):
            row.finished = row.finished or done  # retired at the next plan, before the loop answers it
        return self._post(_deliver, rows, pieces, finished)

    def _post(self, callback: Callable[..., None], *args: object) -> bool:
        """Run `callback(*args)` on the event loop (futures and queues live there)."""
        if self._closed or self._loop is None:
            return False
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the event loop is closed: nobody is left to answer
            return False
        return True

    def _record(self, rows: int, busy_s: float) -> None:
        if not rows:
            return
        self.stats.batches += 1
        self.stats.items += rows
        self.stats.last_batch_size = rows
        self.stats.busy_s += busy_s
        self._recent.append(busy_s)


def _deliver(rows: list[_Row[In]], pieces: Stepped, finished: float) -> None:
    """On the event loop: each row's piece of one step to its caller; finished rows answered."""
    for row, (piece, done) in zip(rows, pieces, strict=True):
        row.steps += 1
        row.rows_seen += len(pieces)
        if piece:
            row.text.append(piece)
            row.pieces.put_nowait(piece)
        if done:
            row.finish(finished)


def _fail_rows(rows: list[_Row[In]], exc: BaseException) -> None:
    for row in rows:
        row.fail(exc)
