"""Open-loop firing of a schedule: every request leaves at its intended time.

A closed-loop generator waits for a reply before sending the next request, so when the server
stalls it quietly stops sending and the stall vanishes from the latency numbers (coordinated
omission). Here each request gets its own greenlet, spawned at `t0 + offset_s` whatever the
earlier ones are doing, and its latency is measured from the intended send time. The time it
actually left (`sent_s`: when it was handed a connection, see `rushhour.scenarios.generator.handoff`) and how
long it waited for that connection (`pool_wait_ms`) are kept too, for the uncorrected service
latency and the generator's own health. Every request that was started ends somewhere: its
answer, its error, its time-out, or its cancellation at the end of the run, and that moment is
`done_s`. Wall-clock time only places the common start; every stamp after it is monotonic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import Any

import gevent
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from gevent import GreenletExit
from gevent.pool import Group

from rushhour.scenarios.generator import handoff
from rushhour.scenarios.generator.partwriter import PartWriter
from rushhour.scenarios.generator.settings import LoadSettings, wait_limit_s
from rushhour.scenarios.generator.turns import (
    Message,
    answer_text,
    check_conversation_size,
    conversation,
    prompt_text,
    sessions_of,
)
from rushhour.scenarios.protocols.outcome import Outcome

JOB_CAP_S = 120.0
"""The longest a document sent through the jobs API is followed, whatever its deadline."""
JOB_GUARD_S = 0.5


Sender = Callable[[dict[str, object], float], Outcome]
"""Send one translate payload with a timeout (seconds) and say what came back.

A sender that queues for connections calls `handoff.mark_handed()` when its request gets one (the
stamping client pool does it); one that never does is taken to have sent at the call when it got
an answer, and never to have reached a connection when it did not."""


def monotonic_anchor(t0: float) -> float:
    """The `time.monotonic()` reading at wall-clock time `t0`: the wall clock places the start once,
    every duration after it is measured on the monotonic clock."""
    return time.monotonic() + (t0 - time.time())


def worker_share(schedule: pa.Table, index: int, count: int) -> pa.Table:
    """The rows this worker fires: schedule row numbers with `row % count == index`, or, for the
    turns of a conversation, `session % count == index` (a session's turns follow each other)."""
    rows = np.arange(schedule.num_rows)
    key = rows
    if "session" in schedule.column_names:
        session = np.asarray(_ints(schedule, "session"), dtype=np.int64)
        key = np.where(session >= 0, session, rows)
    mine = np.flatnonzero(key % count == index)
    return rows_at(schedule, mine, mine)


def rows_at(table: pa.Table, positions: np.ndarray, numbers: np.ndarray) -> pa.Table:
    """`table`'s rows at `positions`, numbered `numbers` (their rows in the whole schedule) in a first
    column `row`."""
    return table.take(_int64(positions)).add_column(0, "row", _int64(numbers))


def _int64(values: np.ndarray) -> pa.Array:
    """`values` as an Arrow array over the same memory. Between numpy and Arrow a load generator goes
    through buffers and Python lists: `pyarrow.array` and `to_numpy` import pandas (about 0.4 s of
    CPU in a process that otherwise does without it)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


@dataclass(frozen=True)
class Share:
    """The rows of the schedule one worker fires (an Arrow table: a load generator's process does
    without pandas) and the run's settings it fires them by, ready to turn rows into payloads."""

    rows: pa.Table
    settings: LoadSettings
    text_for: Callable[[int, int], str]

    @cached_property
    def columns(self) -> RowColumns:
        """The share as plain Python lists: reading a table's row costs tens of microseconds, a list
        item ~50 ns, and the firer reads one row per request."""
        return RowColumns.of(self.rows, self.settings.languages)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Each row's intended send, seconds from the start."""
        return np.asarray(_floats(self.rows, "offset_s"), dtype=float)

    @cached_property
    def via_name(self) -> str:
        """What `via` says for a row not sent as a job (read once: the firer asks for every row)."""
        return self.settings.via_name

    @cached_property
    def jobs_in_use(self) -> bool:
        return self.settings.jobs_in_use

    @cached_property
    def sessions(self) -> dict[int, list[int]]:
        """Share indices of each conversation's turns, in order."""
        return sessions_of(self.columns.session, self.columns.turn)

    def row_number(self, i: int) -> int:
        """Row `i`'s number in the whole schedule."""
        return self.columns.row[i]

    def payload(self, i: int, answers: dict[int, str] | None = None) -> dict[str, object]:
        """The request fields of row `i` (built just in time, to bound memory): the translate
        body's fields plus `kind`, `chars` and `max_tokens` (0: none scheduled), which a
        protocol (`rushhour.scenarios.protocols`) turns into its own request. A conversation's turn carries
        the answers its earlier turns got (`answers`, by share index), stand-ins where none came."""
        c = self.columns
        source, target = c.pair[i]
        fields: dict[str, object] = {
            "text": self._text(i),
            "source_lang": source, "target_lang": target, "mode": c.mode[i],
            "priority": c.priority[i], "tenant": c.tenant[i],
            "deadline_ms": c.deadline_ms[i], "kind": c.kind[i], "chars": c.chars[i],
            "max_tokens": c.max_tokens[i], "base_url": c.base_url[i],
        }
        if c.session[i] >= 0 or c.prompt[i]:
            messages = self._messages(i, answers or {})
            fields["messages"] = messages
            fields["text"] = "\n".join(m["content"] for m in messages)
        return fields

    def _text(self, i: int) -> str:
        c = self.columns
        if c.prompt[i]:
            return prompt_text(c.prompt[i], c.text_id[i], c.chars[i])
        return self.text_for(c.text_id[i], c.chars[i])

    def _messages(self, i: int, got: dict[int, str]) -> list[Message]:
        """The chat messages of a trace row or turn (sent as they are, with no task wrapped around)."""
        c = self.columns
        if c.session[i] < 0:
            return conversation([self._text(i)], [])
        turns = self.sessions[c.session[i]]
        upto = turns[: turns.index(i) + 1]
        check_conversation_size([c.chars[j] for j in upto], [c.max_tokens[j] for j in upto[:-1]])
        answers = [got.get(j) or answer_text(c.text_id[j], c.max_tokens[j], c.chars[j], self.text_for)
                   for j in upto[:-1]]
        return conversation([self._text(j) for j in upto], answers)

    def timeout_s(self, i: int) -> float:
        """Give up on row `i` at its deadline plus a margin (or a fixed timeout if set)."""
        if self.settings.request_timeout_s is not None:
            return self.settings.request_timeout_s
        return self.columns.deadline_ms[i] / 1000.0 + self.settings.timeout_margin_s

    def via_job(self, i: int) -> bool:
        """Whether row `i` is a document that goes through the jobs API."""
        return self.jobs_in_use and self.columns.kind[i] == "document"


@dataclass(frozen=True)
class RowColumns:
    """The columns of a share that building a request reads, one Python list each."""

    row: list[int]
    text_id: list[int]
    chars: list[int]
    pair: list[tuple[str, str]]
    mode: list[str]
    priority: list[str]
    tenant: list[str]
    deadline_ms: list[float]
    kind: list[str]
    max_tokens: list[int]
    base_url: list[str]
    """Per-row target (`rushhour ab` sends each trial to its arm); "" for the session's host."""
    prompt: list[str]
    """"" for a generated text; "raw" or shared blocks for a trace's prompt (`rushhour.traffic_models.text`)."""
    session: list[int]
    """The conversation a turn belongs to (-1: a lone request), its turn number, its think time."""
    turn: list[int]
    think_s: list[float]

    @classmethod
    def of(cls, rows: pa.Table, languages: tuple[str, ...]) -> RowColumns:
        number = _ints(rows, "row")
        pairs = [(source, target) for source, _, target in (pair.partition("-") for pair in languages)]
        n = rows.num_rows
        return cls(
            row=number, text_id=_ints(rows, "text_id"), chars=_ints(rows, "chars"),
            pair=[pairs[k % len(pairs)] for k in number],
            mode=_strings(rows, "mode", n), priority=_strings(rows, "priority", n), tenant=_strings(rows, "tenant", n),
            deadline_ms=_floats(rows, "deadline_ms"), kind=_strings(rows, "kind", n),
            max_tokens=_ints(rows, "max_tokens", n, 0), base_url=_strings(rows, "base_url", n),
            prompt=(pc.fill_null(pc.cast(rows.column("prompt"), pa.string()), "").to_pylist()
                    if "prompt" in rows.column_names else [""] * n),
            session=_ints(rows, "session", n, -1), turn=_ints(rows, "turn", n, 0),
            think_s=_floats(rows, "think_s") if "think_s" in rows.column_names else [0.0] * n,
        )


def _ints(rows: pa.Table, name: str, n: int = 0, missing: int = 0) -> list[int]:
    """The column's values as Python ints; `missing` for each row when the table has no such column.
    (Arrow casts the column, so no Python code runs per value: this is built on a thread beside the
    event loop, and a per-value loop would hold the interpreter lock longer.)"""
    return _as(rows, name, pa.int64()) if name in rows.column_names else [missing] * n


def _floats(rows: pa.Table, name: str) -> list[float]:
    return _as(rows, name, pa.float64())


def _strings(rows: pa.Table, name: str, n: int) -> list[str]:
    return _as(rows, name, pa.string()) if name in rows.column_names else [""] * n


def _as(rows: pa.Table, name: str, kind: pa.DataType) -> list[Any]:
    return pc.cast(rows.column(name), kind).to_pylist()


class OpenLoopFirer:
    """Fires a Share against `send`, recording each outcome into a PartWriter."""

    def __init__(self, share: Share, send: Sender, writer: PartWriter, *,
                 send_job: Sender | None = None, group: Group | None = None) -> None:
        self._share = share
        self._send = send
        self._send_job = send_job
        self._writer = writer
        self._group = group if group is not None else Group()

    def run(self, t0: float, *, drain_s: float | None = None, more: Iterable[Share] = ()) -> None:
        """Fire every row at `t0 + offset_s` (`t0` wall clock), then the rows of each share in
        `more` (the later batches of a share read in pieces), then wait (bounded) for the last replies."""
        m0 = monotonic_anchor(t0)
        longest = 0.0
        try:
            for firer in chain([self], (self._sibling(share) for share in more)):
                firer._fire(m0)
                longest = max(longest, firer._max_timeout())
            self._group.join(timeout=drain_s if drain_s is not None else longest)
        finally:
            self._group.kill(block=True, timeout=2.0)  # the rest end now, recorded as cancelled
            self._writer.flush()

    def _sibling(self, share: Share) -> OpenLoopFirer:
        """A firer of another batch of the same share: same senders, part writer and greenlet group."""
        return OpenLoopFirer(share, self._send, self._writer, send_job=self._send_job, group=self._group)

    def _fire(self, m0: float) -> None:
        """Spawn each row of this share at its time (each greenlet keeps this firer, so its share)."""
        offsets = self._share.offsets
        session, turn = self._share.columns.session, self._share.columns.turn
        for i, offset in enumerate(offsets):
            if turn[i] > 0:
                continue  # a later turn is sent by its conversation, after the answer before it
            delay = m0 + offset - time.monotonic()
            if delay > 0:
                gevent.sleep(delay)
            self._group.spawn(self.converse if session[i] >= 0 else self.shoot, i, m0, float(offset))
            self._writer.maybe_flush()

    def converse(self, i: int, m0: float, offset: float) -> None:
        """Send a conversation's turns in order: the first at `offset`, each later one its think
        time after the answer before it ended, which is the turn's intended send."""
        think = self._share.columns.think_s
        answers: dict[int, str] = {}
        for k, j in enumerate(self._share.sessions[self._share.columns.session[i]]):
            if k:
                offset = time.monotonic() - m0 + think[j]
                gevent.sleep(think[j])
            answers[j] = self.shoot(j, m0, offset, answers=answers).text

    def _max_timeout(self) -> float:
        c = self._share.columns
        if not c.row:
            return 0.0
        settings = self._share.settings
        each = wait_limit_s(max(c.deadline_ms), settings.request_timeout_s, settings.timeout_margin_s) + 1.0
        if not self._share.sessions:
            return each
        session = np.asarray(c.session)
        turns = session >= 0
        _, which = np.unique(session[turns], return_inverse=True)
        think = np.bincount(which, weights=np.asarray(c.think_s)[turns])
        return float((think + np.bincount(which) * each).max())

    def shoot(self, i: int, m0: float, offset: float, send: Sender | None = None, *,
              answers: dict[int, str] | None = None) -> Outcome:
        """Send row `i` now and record it (intended at `m0 + offset`, monotonic); blocks until it ends.

        A document goes through the jobs API when the settings say so and a job sender is given;
        its follower bounds itself by the row's timeout (capped at JOB_CAP_S), so the outer
        guard only catches a follower that overruns.
        """
        job = self._send_job if self._share.via_job(i) else None
        limit = min(self._share.timeout_s(i), JOB_CAP_S) if job else self._share.timeout_s(i)
        chosen: Sender = job or send or self._send
        handoff.begin()
        started = time.monotonic()
        try:
            payload = self._share.payload(i, answers)
            started = time.monotonic()  # the wait for a connection starts once the body is built
            outcome = self._timed_send(chosen, payload, limit, guard_s=limit + JOB_GUARD_S if job else limit)
        except GreenletExit:
            outcome = Outcome(status=0, error="cancelled")
        except Exception as exc:  # noqa: BLE001 - a bad row must cost one row, never the whole worker
            outcome = Outcome(status=0, error=f"client error: {type(exc).__name__}: {exc}")
        ended = time.monotonic()
        handed = handoff.handed_at()
        if handed is None and outcome.status:
            handed = started  # a sender without a connection pool: it left at the call
        first = outcome.first_segment_at - m0 if outcome.first_segment_at is not None else float("nan")
        tokens = outcome.tokens
        self._writer.add(
            row=self._share.row_number(i), intended_s=offset,
            sent_s=handed - m0 if handed is not None else float("nan"), done_s=ended - m0,
            pool_wait_ms=((handed if handed is not None else ended) - started) * 1000.0,
            status=outcome.status, error=_never_connected(outcome.error) if handed is None else outcome.error,
            model=outcome.model, cached=outcome.cached, degraded=outcome.degraded, node=outcome.node,
            first_segment_s=first, via="job" if job else self._share.via_name,
            first_token_s=_since(tokens.first_at, m0), last_token_s=_since(tokens.last_at, m0),
            output_tokens=-1 if tokens.output_tokens is None else tokens.output_tokens,
            input_tokens=-1 if tokens.input_tokens is None else tokens.input_tokens,
            itl_p50_ms=tokens.itl_p50_ms, itl_p99_ms=tokens.itl_p99_ms, itl_max_ms=tokens.itl_max_ms,
        )
        return outcome

    def flush(self) -> None:
        """Write out what is recorded so far (closed-loop users call this when done)."""
        self._writer.flush()

    @staticmethod
    def _timed_send(send: Sender, payload: dict[str, object], timeout_s: float, *,
                    guard_s: float) -> Outcome:
        """Send with a hard limit. geventhttpclient turns our gevent.Timeout into its own error,
        so whether the limit struck is read from the timer, not from what the client says."""
        timer = gevent.Timeout(guard_s)
        timer.start()
        try:
            outcome = send(payload, timeout_s)
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            return Outcome(status=0, error="timeout")
        finally:
            struck = not timer.pending
            timer.close()
        return Outcome(status=0, error="timeout") if struck and not outcome.status else outcome


def _since(moment: float | None, m0: float) -> float:
    return moment - m0 if moment is not None else float("nan")


def _never_connected(error: str) -> str:
    """The error of a request that gave up before any connection was free for it."""
    return f"{error or 'no response'} waiting for a connection"
