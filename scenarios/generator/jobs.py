"""Long documents through the jobs API: submit once, then poll in the same greenlet.

`POST /v1/jobs` answers 202 with an id at once; `GET /v1/jobs/{id}` shows the segments finished
so far. The follower notes when the first segment became visible (the reader's time to first
segment) and ends at the poll that shows the job `done` or `failed`. It never outlives its limit:
a job still unfinished then is recorded like any request the client gave up on (status 0, error
"timeout"), and is left to finish on the server, as a reader who stops waiting leaves it (a
capacity search cancels what a step left on the server it booted, before the next step).

A failed job answers its polls with 200, so its status is taken from the job's error code
(`JOB_ERROR_STATUS`, 500 for codes not listed): a job that failed because every retry of a
segment was shed still counts as shed.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gevent

from rushhour.scenarios.protocols.outcome import Outcome, outcome_from

JOBS_PATH = "/v1/jobs"
JOB_POLL_NAME = "/v1/jobs/{id}"
POLL_INTERVAL_S = 0.1
JOB_ERROR_STATUS = {
    "deadline_exceeded": 504, "rate_limited": 429, "overloaded": 503, "unavailable": 503,
    "node_error": 503, "too_many_jobs": 503, "text_too_large": 413, "invalid_field": 422,
    "unsupported_language": 422,
}
FAILED_JOB_STATUS = 500


@dataclass(frozen=True)
class Reply:
    """One HTTP answer as the follower needs it (status 0 = no response at all)."""

    status: int
    body: bytes | None = None
    error: str = ""


Call = Callable[[str, dict[str, object] | None], Reply]
"""POST `path` with this JSON body, or GET it when the body is None."""


class JobFollower:
    """Submits one document as a job and polls it until it is done, failed or out of time."""

    def __init__(self, call: Call, *, poll_s: float = POLL_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], object] = gevent.sleep) -> None:
        self._call = call
        self._poll_s = poll_s
        self._clock = clock
        self._sleep = sleep
        self.first_segment_at: float | None = None
        self.polls = 0

    def run(self, payload: dict[str, object], limit_s: float) -> Outcome:
        """Follow the job for at most `limit_s` seconds; the Outcome carries the first-segment time."""
        give_up = self._clock() + limit_s
        timer = gevent.Timeout(max(limit_s, 0.0))
        timer.start()
        try:
            return self._follow(payload, give_up)
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            return self._timeout()
        finally:
            timer.close()

    def _follow(self, payload: dict[str, object], give_up: float) -> Outcome:
        reply = self._call(JOBS_PATH, payload)
        if self._clock() >= give_up:
            return self._timeout()  # the HTTP client may report our own time-out as its error
        if not 200 <= reply.status < 300:
            return outcome_from(reply.status, reply.body, reply.error)
        job_id = _json(reply.body).get("id")
        if not isinstance(job_id, str) or not job_id:
            return Outcome(status=0, error="job accepted without an id")
        while True:
            wait = min(self._poll_s, give_up - self._clock())
            if wait <= 0:
                return self._timeout()
            self._sleep(wait)
            reply = self._call(f"{JOBS_PATH}/{job_id}", None)
            self.polls += 1
            if reply.status == 0 and self._clock() >= give_up:
                return self._timeout()
            if reply.status != 200:
                return self._with_first(outcome_from(reply.status, reply.body, reply.error))
            view = _json(reply.body)
            segments = view.get("segments")
            segments = segments if isinstance(segments, list) else []
            if segments and self.first_segment_at is None:
                self.first_segment_at = self._clock()
            if view.get("state") == "done":
                return self._with_first(done_outcome(segments))
            if view.get("state") == "failed":
                return self._with_first(failed_outcome(view.get("error")))

    def _timeout(self) -> Outcome:
        return Outcome(status=0, error="timeout", first_segment_at=self.first_segment_at)

    def _with_first(self, outcome: Outcome) -> Outcome:
        return Outcome(status=outcome.status, error=outcome.error, model=outcome.model,
                       cached=outcome.cached, degraded=outcome.degraded, node=outcome.node,
                       first_segment_at=self.first_segment_at)


def done_outcome(segments: Sequence[object]) -> Outcome:
    """A finished job: the model that served most segments, cached only if every segment was,
    degraded if any was."""
    rows = [s for s in segments if isinstance(s, dict)]
    models = Counter(str(s.get("model") or "") for s in rows)
    model = models.most_common(1)[0][0] if models else ""
    return Outcome(status=200, model=model, cached=bool(rows) and all(bool(s.get("cached")) for s in rows),
                   degraded=any(bool(s.get("degraded")) for s in rows))


def failed_outcome(error: object) -> Outcome:
    """A failed job: its error code, with the HTTP status that code has on /v1/translate."""
    code = str(error.get("code") or "") if isinstance(error, dict) else ""
    return Outcome(status=JOB_ERROR_STATUS.get(code, FAILED_JOB_STATUS), error=code or "job failed")


def _json(body: bytes | None) -> dict[str, object]:
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
