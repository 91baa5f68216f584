"""The target's saturated throughput in a few seconds: a closed loop of doubling size.

`users` senders each send the scenario's mix one request after another, with no pause; every
`LEVEL_S` their number doubles, until a doubling adds less than `GAIN` to the rate of successful
answers (every slot is busy: the service is saturated) or `MOST_USERS` is reached. Each user's
requests are independent draws from the mix, so the answers completed follow the mix too, and
the rate found is what the service completes of *this* mix with its bottleneck busy, whichever
pool that is. Being closed, the loop never queues more than its users, so it leaves no backlog
for the search's first step to drain.

This figure is not a capacity: it says nothing about latency and no SLO is judged on it. It
only tells the search where to start (`rushhour.scenarios.capacity.bracket`); every rate reported is one
a judged step passed.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pandas as pd

from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.capacity.steps import step_schedule
from rushhour.scenarios.protocols.admission import admitted_client
from rushhour.scenarios.protocols.base import make_protocol
from rushhour.scenarios.protocols.tls import verify_setting
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.traffic_models import text_for

__all__ = ["Level", "Saturation", "closed_loop", "measure_throughput", "next_users", "row_sender"]

FIRST_USERS = 4
MOST_USERS = 256
LEVEL_S = 1.5
LEVEL_ANSWERS = 50
"""A level lasts until this many answers came in (at most `LONGEST_LEVEL_S`): a rate from a few
dozen answers is too noisy to tell a doubling's gain from chance."""
LONGEST_LEVEL_S = 5.0
GAIN = 1.15
REQUEST_TIMEOUT_S = 10.0
JOIN_S = 1.0
PROBE_ROWS = 4000
PROBE_SPAN_S = 20.0

Send = Callable[[int], bool]
"""Sends request number `i` of the mix and says whether it succeeded."""


@dataclass(frozen=True)
class Level:
    """One level of the loop: its users, how long it was counted, and the answers that came in."""

    users: int
    seconds: float
    ok: int
    failed: int

    @property
    def ok_rps(self) -> float:
        return self.ok / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {"users": self.users, "seconds": round(self.seconds, 2), "ok": self.ok, "failed": self.failed,
                "ok_rps": round(self.ok_rps, 2)}


@dataclass(frozen=True)
class Saturation:
    """Every level measured; `saturated` is False when the most users still added throughput."""

    levels: tuple[Level, ...]
    saturated: bool

    @property
    def throughput_rps(self) -> float:
        return max((level.ok_rps for level in self.levels), default=0.0)

    @property
    def seconds(self) -> float:
        return sum(level.seconds for level in self.levels)

    def as_dict(self) -> dict[str, object]:
        return {"throughput_rps": round(self.throughput_rps, 2), "saturated": self.saturated,
                "levels": [level.as_dict() for level in self.levels]}


def next_users(levels: list[Level], *, gain: float = GAIN, most: int = MOST_USERS) -> int | None:
    """The next level's users, or None once a doubling added less than `gain` (saturated), the
    last level had no successful answer, or `most` users were reached."""
    if not levels:
        return FIRST_USERS
    last = levels[-1]
    if last.ok == 0 or last.users >= most:
        return None
    best_before = max((level.ok_rps for level in levels[:-1]), default=0.0)
    if best_before > 0 and last.ok_rps < gain * best_before:
        return None
    return min(2 * last.users, most)


class _Loop:
    """The users' threads and what each answer was (its end time, success)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._numbers = itertools.count()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.answers: list[tuple[float, bool]] = []

    def grow(self, users: int) -> None:
        while len(self._threads) < users:
            thread = threading.Thread(target=self._user, name="throughput-probe", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _user(self) -> None:
        while not self._stop.is_set():
            ok = self._send(next(self._numbers))
            if not self._stop.is_set():
                self.answers.append((time.monotonic(), ok))

    def count(self, start: float, end: float) -> tuple[int, int]:
        inside = [ok for at, ok in list(self.answers) if start <= at < end]
        return sum(inside), len(inside) - sum(inside)

    def stop(self) -> None:
        self._stop.set()
        deadline = time.monotonic() + JOIN_S
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def closed_loop(send: Send, *, level_s: float = LEVEL_S, gain: float = GAIN, most: int = MOST_USERS,
                answers: int = LEVEL_ANSWERS) -> Saturation:
    """Run the doubling closed loop over `send` and return every level (bounded: at most
    log2(most / FIRST_USERS) + 1 levels, each `level_s` or until `answers` came in, at most
    LONGEST_LEVEL_S)."""
    loop = _Loop(send)
    levels: list[Level] = []
    users = next_users(levels, gain=gain, most=most)
    try:
        while users is not None:
            began = time.monotonic()
            loop.grow(users)
            time.sleep(level_s)
            while sum(loop.count(began, time.monotonic())) < answers and time.monotonic() - began < LONGEST_LEVEL_S:
                time.sleep(level_s / 10.0)
            ended = time.monotonic()
            ok, failed = loop.count(began, ended)
            levels.append(Level(users, ended - began, ok, failed))
            users = next_users(levels, gain=gain, most=most)
    finally:
        loop.stop()
    last = levels[-1] if levels else None
    saturated = last is not None and last.users < most and last.ok > 0
    return Saturation(tuple(levels), saturated)


def row_sender(client: httpx.Client, target: TargetProtocol, rows: pd.DataFrame, languages: tuple[str, ...]
               ) -> Send:
    """A `Send` of the schedule's rows (cycled) through the target's protocol, each request given
    REQUEST_TIMEOUT_S at most. Documents go as ordinary requests: a probe has no jobs to poll."""
    protocol = make_protocol(target)
    pairs = [tuple(pair.split("-", 1)) for pair in languages] or [("en", "de")]
    records = rows.to_dict("records")

    def send(i: int) -> bool:
        row = records[i % len(records)]
        source, target_lang = pairs[i % len(pairs)]
        fields = {"text": text_for(int(row["text_id"]), int(row["chars"])), "source_lang": source,
                  "target_lang": target_lang, "mode": str(row["mode"]), "priority": str(row["priority"]),
                  "tenant": str(row["tenant"]), "deadline_ms": float(row["deadline_ms"]), "kind": str(row["kind"]),
                  "chars": int(row["chars"]), "max_tokens": int(row.get("max_tokens") or 0), "base_url": ""}
        request = protocol.request(fields)
        timeout = min(REQUEST_TIMEOUT_S, float(row["deadline_ms"]) / 1000.0 + 1.0)
        try:
            with client.stream(request.method, request.path, content=request.body, headers=request.headers,
                               timeout=timeout) as response:
                status = response.status_code
                if request.stream and 200 <= status < 300:
                    outcome = protocol.read_stream(_line_reader(response), status)
                else:
                    outcome = protocol.parse(status, response.read())
        except (httpx.HTTPError, RuntimeError):  # RuntimeError: the client closed under a late request
            return False
        return 200 <= outcome.status < 300 and not outcome.error

    return send


def _line_reader(response: httpx.Response) -> Callable[[bytes], bytes]:
    """`readline` over a streamed answer: each line with its newline, b"" at the end."""
    lines = response.iter_lines()

    def readline(_separator: bytes) -> bytes:
        line = next(lines, None)
        return b"" if line is None else line.encode("utf-8") + b"\n"

    return readline


def measure_throughput(job: CapacityJob, url: str) -> Saturation:
    """The closed loop against `url` with the job's mix and protocol (rows drawn once, cycled)."""
    rows = step_schedule(job.mix, rate_rps=PROBE_ROWS / PROBE_SPAN_S, duration_s=PROBE_SPAN_S, seed=job.seed)
    target = job.protocol
    limits = httpx.Limits(max_connections=MOST_USERS, max_keepalive_connections=MOST_USERS)
    with admitted_client(base_url=url.rstrip("/"), timeout=httpx.Timeout(5.0), verify=verify_setting(target.ca_bundle),
                         limits=limits) as client:
        return closed_loop(row_sender(client, target, rows, job.scenario.load.languages))
