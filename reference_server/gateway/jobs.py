"""Long documents: split into sentences, translated segment by segment through the normal path.

A document too long for one request becomes a job. Each sentence is an ordinary translate
request, so segments are rate limited, admitted, batched on nodes and cached one by one (the
segment-level cache: a document that repeats a sentence, or a second document sharing some,
computes it once). A few segments of a job are in flight at once, so a node can batch them, and
results are published strictly in order. Jobs are bounded: at most `max_running` translate at
once, at most `max_active` are queued or running (more answer 503), and the store keeps at most
`max_jobs` jobs and about `max_bytes` bytes of text, the oldest finished evicted first; a job the
unfinished ones leave no room for is refused (503). A job ends `done` or `failed`, whatever
goes wrong in it; a job cancelled (`DELETE /v1/jobs/{id}`, or every job at once with
`POST /admin/jobs/cancel`) ends `failed` with the code "cancelled", its untranslated segments
never sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from rushhour.reference_server.config import JobsConfig
from rushhour.reference_server.gateway.api import ApiError, TranslateRequest, TranslateResponse, shorten

log = logging.getLogger("rushhour.gateway")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
RETRY_STATUSES = frozenset({429, 503, 504})
MAX_ATTEMPTS = 6
MAX_RETRY_SLEEP_S = 5.0
SEGMENT_OVERHEAD_BYTES = 400  # a result dict, its keys and two list slots, roughly
CANCELLED: dict[str, object] = {"code": "cancelled", "message": "The job was cancelled."}

Translate = Callable[[TranslateRequest], Awaitable[TranslateResponse]]


def split_segments(text: str, max_chars: int) -> list[str]:
    """Sentences (split after . ! ? followed by white space); a sentence longer than
    `max_chars` is cut into pieces of at most that many characters."""
    segments: list[str] = []
    for sentence in SENTENCE_END.split(text.strip()):
        sentence = sentence.strip()
        segments.extend(sentence[i : i + max_chars] for i in range(0, len(sentence), max_chars))
    return [s for s in segments if s]


@dataclass(eq=False)  # identity, so a job can sit in a set
class Job:
    id: str
    request: TranslateRequest
    sources: list[str]
    created: float = field(default_factory=time.monotonic)
    state: str = "queued"
    started: float | None = None
    results: list[dict[str, object] | None] = field(default_factory=list)
    error: dict[str, object] | None = None
    task: asyncio.Task[None] | None = None
    size_bytes: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.results = [None] * len(self.sources)
        self.size_bytes = sys.getsizeof(self.request.text) + sum(sys.getsizeof(s) + SEGMENT_OVERHEAD_BYTES for s in self.sources)

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    def ready_prefix(self) -> list[dict[str, object]]:
        """The finished segments that have every earlier one finished too, in order."""
        out: list[dict[str, object]] = []
        for result in self.results:
            if result is None:
                break
            out.append(result)
        return out

    def eta_s(self, now: float) -> float | None:
        """Seconds to go at the pace so far; None until a segment has finished."""
        done = sum(1 for r in self.results if r is not None)
        if self.state == "done":
            return 0.0
        if self.started is None or done == 0 or self.finished:
            return None
        return round((now - self.started) / done * (len(self.results) - done), 3)

    def view(self) -> dict[str, object]:
        body: dict[str, object] = {
            "id": self.id,
            "state": self.state,
            "progress": {"done": sum(1 for r in self.results if r is not None), "total": len(self.results)},
            "eta_s": self.eta_s(time.monotonic()),
            "segments": self.ready_prefix(),
        }
        if self.error is not None:
            body["error"] = self.error
        return body

    def notify(self) -> None:
        """Wake everyone waiting for a change (streams), and arm a fresh event for the next."""
        self._changed.set()
        self._changed = asyncio.Event()

    def watch(self) -> asyncio.Event:
        """The event the next change sets; take it before reading the state, so that no change
        between the read and the wait goes unseen."""
        return self._changed


class JobManager:
    def __init__(
        self, config: JobsConfig, *, translate: Translate, segment_chars: int, check: Callable[[TranslateRequest], object],
        rank_of: Callable[[str], int] = lambda priority: 0, max_bytes: int | None = None,
    ) -> None:
        self.config = config
        self.max_bytes = config.max_bytes if max_bytes is None else max_bytes
        self.stored_bytes = 0  # of the jobs kept in `jobs`
        self._rank_of = rank_of
        self._translate = translate
        self._segment_chars = segment_chars
        self._check = check
        self.jobs: OrderedDict[str, Job] = OrderedDict()
        self._active: set[Job] = set()
        self._running = asyncio.Semaphore(config.max_running)

    def active_limit(self, rank: int) -> int:
        """Room is kept for higher classes: each rank below the top may fill `reserve_per_rank`
        less of `max_active`, so a flood of free documents cannot lock paid ones out."""
        share = max(0.1, 1.0 - self.config.reserve_per_rank * rank)
        return max(1, int(self.config.max_active * share))

    def submit(self, req: TranslateRequest, *, keep: bool = True) -> Job:
        """Validate, enqueue and start a job; `keep=False` for streams, which nobody polls."""
        if len(req.text) > self.config.max_chars:
            raise ApiError(413, "text_too_large",
                           f"The document has {len(req.text)} characters; the limit for jobs is {self.config.max_chars}.")
        sources = split_segments(req.text, self._segment_chars)
        if not sources:
            raise ApiError(422, "invalid_field", 'Field "text": the document has no text to translate.')
        priority = str(self._check(req.model_copy(update={"text": sources[0]})))
        limit = self.active_limit(self._rank_of(priority))
        if len(self._active) >= limit:
            raise ApiError(503, "too_many_jobs",
                           f'{len(self._active)} jobs are queued or running; the limit for "{priority}" is {limit}.',
                           retry_after_s=1.0)
        job = Job(uuid.uuid4().hex, req, sources)
        if keep:
            self._keep(job)
        self._active.add(job)
        job.task = asyncio.get_running_loop().create_task(self._run(job), name=f"job-{job.id}")
        return job

    def get(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise ApiError(404, "unknown_job", f'There is no job "{shorten(job_id)}"; it never existed or was evicted.')
        return job

    async def cancel(self, job_id: str) -> Job:
        """Stop a queued or running job: its segments not yet translated never are, and it ends
        `failed` with the error code "cancelled". A finished job is answered as it is."""
        job = self.get(job_id)
        await self._cancel(job)
        return job

    async def cancel_all(self) -> int:
        """Stop every queued or running job, streams included; how many were stopped."""
        jobs = list(self._active)
        for job in jobs:
            await self._cancel(job)
        return len(jobs)

    async def _cancel(self, job: Job) -> None:
        """Cancel `job`'s task and wait until it has ended. A task cancelled before its first step
        never runs `_run` (nor its `finally`), so such a job is ended here."""
        if job.task is not None and not job.task.done():
            job.task.cancel()
            await asyncio.gather(job.task, return_exceptions=True)
        if not job.finished:
            job.state, job.error = "failed", dict(CANCELLED)
            self._active.discard(job)
            job.notify()
            self._evict()

    def status(self) -> dict[str, object]:
        return {
            "kept": len(self.jobs), "active": len(self._active), "bytes": self.stored_bytes, "max_jobs": self.config.max_jobs,
            "max_bytes": self.max_bytes, "max_chars": self.config.max_chars,
        }

    def _keep(self, job: Job) -> None:
        """Store a new job, evicting finished ones for room; its translations are expected to
        take about as much room as its text, so that much is kept free for them."""
        needed = job.size_bytes + sum(sys.getsizeof(s) for s in job.sources)
        self._evict(room=needed)
        if self.stored_bytes + needed > self.max_bytes:
            raise ApiError(
                503, "job_store_full",
                f"The unfinished jobs hold {self.stored_bytes} bytes; a job of {needed} bytes does not fit in {self.max_bytes}.",
                retry_after_s=1.0,
            )
        self.jobs[job.id] = job
        self.stored_bytes += job.size_bytes
        self._evict()

    def _evict(self, *, room: int = 0) -> None:
        """Drop the oldest finished jobs until at most `max_jobs` are kept and `room` bytes are free."""
        for job in [j for j in self.jobs.values() if j.finished]:
            if len(self.jobs) <= self.config.max_jobs and self.stored_bytes + room <= self.max_bytes:
                return
            del self.jobs[job.id]
            self.stored_bytes -= job.size_bytes

    def _grow(self, job: Job, size: int) -> None:
        job.size_bytes += size
        if self.jobs.get(job.id) is job:
            self.stored_bytes += size

    async def _run(self, job: Job) -> None:
        try:
            async with self._running:
                job.state, job.started = "running", time.monotonic()
                job.notify()
                await self._translate_all(job)
            job.state = "done"
        except ApiError as exc:
            job.state, job.error = "failed", {"code": exc.code, "message": exc.message}
        except asyncio.CancelledError:
            job.state, job.error = "failed", dict(CANCELLED)
            raise
        except Exception as exc:  # a job must end, whatever broke in it
            log.exception("job %s failed", job.id)
            job.state, job.error = "failed", {"code": "internal_error",
                                              "message": f"The job failed unexpectedly: {type(exc).__name__}: {exc}."}
        finally:
            self._active.discard(job)
            job.notify()
            self._evict()

    async def _translate_all(self, job: Job) -> None:
        """`concurrency` workers take the next segment in order; the first failure ends the job."""
        indexes = iter(range(len(job.sources)))

        async def worker() -> None:
            for index in indexes:
                result = await self._segment(job, index)
                job.results[index] = result
                self._grow(job, sys.getsizeof(result["translation"]))
                job.notify()

        workers = [asyncio.create_task(worker()) for _ in range(min(self.config.concurrency, len(job.sources)))]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _segment(self, job: Job, index: int) -> dict[str, object]:
        """One segment through the normal path; shed or rate-limited attempts wait and retry,
        so overload slows a job down instead of failing it at once."""
        req = job.request.model_copy(update={"text": job.sources[index]})
        for attempt in range(MAX_ATTEMPTS):
            try:
                answer = await self._translate(req)
            except ApiError as exc:
                if exc.status not in RETRY_STATUSES or attempt == MAX_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(min(exc.retry_after_s or 0.5, MAX_RETRY_SLEEP_S))
                continue
            return {"index": index, "translation": answer.translation, "model": answer.model,
                    "cached": answer.cached, "degraded": answer.degraded}
        raise AssertionError("unreachable")

    async def stream(self, job: Job) -> AsyncIterator[str]:
        """Server-sent events: one `segment` event per segment in order, then `done` (or `error`).
        A client that goes away cancels the job."""
        sent = 0
        try:
            while True:
                changed = job.watch()
                ready = job.ready_prefix()
                for result in ready[sent:]:
                    yield sse("segment", result)
                sent = len(ready)
                if job.state == "done":
                    yield sse("done", {"id": job.id, "segments": sent})
                    return
                if job.state == "failed":
                    yield sse("error", job.error or {})
                    return
                await changed.wait()
        finally:
            if job.task is not None and not job.task.done():
                job.task.cancel()

    async def close(self) -> None:
        tasks = [job.task for job in self._active if job.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def sse(event: str, data: object) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
