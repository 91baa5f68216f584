"""HTTP routes of long-document jobs (`/v1/jobs`) and of the streaming translate (SSE).

`/v1/translate/stream` streams a document's sentences as `segment` events; a text that is one
segment (one sentence, at most `max_chars`) streams its `piece` events as the node decodes them,
then the same `segment` and `done` events.

Both answer at once and tell the caller what lies ahead: `X-Queue-Position` (requests of the
same or a higher priority class waiting in the pool that will serve the first segment; 0 = none)
and, when the pool has an estimate, `X-Estimated-Wait-Ms` (the dispatcher's `estimated_wait_s`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response, StreamingResponse

from rushhour.reference_server.config import ServerConfig
from rushhour.reference_server.gateway.api import ApiError, TranslateRequest, error_response
from rushhour.reference_server.gateway.deps import GatewayDep, JobsDep, ServiceDep
from rushhour.reference_server.gateway.jobs import split_segments, sse
from rushhour.reference_server.gateway.pieces import PieceStream
from rushhour.reference_server.gateway.placement import choose_tier
from rushhour.reference_server.gateway.service import TranslationService

JOB_PATHS = ("/v1/jobs", "/v1/translate/stream")  # take documents of up to jobs.max_chars
JSON_BYTES_PER_CHAR = 12  # "\ud83d\ude00": an ASCII-only JSON encoder's form of one character
JSON_OVERHEAD_BYTES = 4096  # the other fields of a translate request, with room to spare


def body_limit(config: ServerConfig) -> int:
    """Request bytes of the job paths: a document of `jobs.max_chars` characters fits however its
    client encodes it (every character escaped by an ASCII-only JSON encoder; UTF-8 takes at most
    4 bytes a character), and never less than the other paths' `max_body_bytes`."""
    return max(config.max_body_bytes, config.jobs.max_chars * JSON_BYTES_PER_CHAR + JSON_OVERHEAD_BYTES)


def queue_headers(service: TranslationService, req: TranslateRequest) -> dict[str, str]:
    """Where a new request of this kind would stand in its pool's admission queue now."""
    config = service.config
    priority = req.priority or config.admission.default_priority
    if priority not in config.admission.classes:
        return {}
    tier = choose_tier(config.routing, req, priority, has_fast_pool=config.pool_for_tier("fast") is not None)
    pool = config.pool_for_tier(tier)
    if pool is None:
        return {}
    dispatcher = service.dispatchers[pool]
    rank = config.admission.classes[priority].rank
    ahead = sum(dispatcher.queued(name) for name, cls in config.admission.classes.items() if cls.rank <= rank)
    headers = {"X-Queue-Position": str(ahead)}
    estimate = dispatcher.estimated_wait_s(priority) if ahead else 0.0
    if estimate is not None:
        headers["X-Estimated-Wait-Ms"] = str(round(estimate * 1000.0, 1))
    return headers


router = APIRouter(tags=["jobs"])


@router.post("/v1/jobs", status_code=202)
async def submit(req: TranslateRequest, service: ServiceDep, jobs: JobsDep) -> JSONResponse:
    """Start translating a long document; poll `GET /v1/jobs/{id}` for progress."""
    headers = queue_headers(service, req)
    job = jobs.submit(req)
    return JSONResponse({"id": job.id}, status_code=202, headers={**headers, "Location": f"/v1/jobs/{job.id}"})


@router.get("/v1/jobs/{job_id:path}")  # any id, slashes too, gets a JSON answer (404), never a redirect
async def job_status(job_id: str, jobs: JobsDep) -> dict[str, object]:
    """State, progress, estimated time left and the segments finished so far, in order."""
    return jobs.get(job_id).view()


@router.delete("/v1/jobs/{job_id:path}")
async def cancel_job(job_id: str, jobs: JobsDep) -> dict[str, object]:
    """Stop a queued or running job (it ends `failed`, code "cancelled"); a finished one is
    answered as it is."""
    return (await jobs.cancel(job_id)).view()


@router.post("/v1/translate/stream")
async def stream(req: TranslateRequest, gateway: GatewayDep, jobs: JobsDep) -> Response:
    """Translate a document and send each segment as a server-sent event as soon as it and
    every segment before it are done; then a `done` event (or `error`). A one-segment text
    sends `piece` events as it is decoded first."""
    service = gateway.service
    headers = queue_headers(service, req)
    if len(req.text) <= service.config.max_chars and len(split_segments(req.text, service.config.max_chars)) == 1:
        pieces = PieceStream(service, req, endpoint="translate_stream", metrics=gateway.metrics)
        pieces.start()
        try:
            first = await pieces.first()
        except ApiError as exc:
            return error_response(exc)
        return StreamingResponse(_piece_events(pieces, first), media_type="text/event-stream",
                                 headers={**headers, "Cache-Control": "no-cache"})
    job = jobs.submit(req, keep=False)
    return StreamingResponse(jobs.stream(job), media_type="text/event-stream", headers={**headers, "Cache-Control": "no-cache"})


async def _piece_events(pieces: PieceStream, first: str | None) -> AsyncIterator[str]:
    try:
        if first is not None:
            yield sse("piece", {"text": first})
        async for piece in pieces.rest():
            yield sse("piece", {"text": piece})
        answer = await pieces.result()
    except ApiError as exc:
        yield sse("error", {"code": exc.code, "message": exc.message})
        return
    finally:
        await pieces.close()
    yield sse("segment", {"index": 0, "translation": answer.translation, "model": answer.model,
                          "cached": answer.cached, "degraded": answer.degraded})
    yield sse("done", {"id": uuid.uuid4().hex, "segments": 1})
