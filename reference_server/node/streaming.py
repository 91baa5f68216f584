"""`POST /infer` with `"stream": true`: a row's pieces as NDJSON lines while it decodes.

Lines: `{"piece": "..."}` for each piece, then `{"done": true, "translation", "model",
"queue_ms", "infer_ms", "batch_size"}`. The status line is sent with the first piece, so a request
refused before any piece (queue full, deadline, cannot meet it) gets its usual status and JSON
error; a failure after pieces went out ends the stream with `{"error": {"status", "code",
"message"}}`. A dynamic batcher computes the whole output first and sends it as one piece.
A client that goes away drops its row at the next step boundary.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from starlette.responses import JSONResponse, Response, StreamingResponse

from rushhour.reference_server.batcher import (
    BatchInfo,
    CannotMeetDeadline,
    DeadlineExceeded,
    DynamicBatcher,
    QueueFull,
)
from rushhour.reference_server.continuous import ContinuousBatcher
from rushhour.reference_server.model import ModelInput

__all__ = ["error_for", "error_json", "stream_answer"]

NDJSON = "application/x-ndjson"


def error_json(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def error_for(exc: Exception) -> tuple[int, str]:
    """The status and code a batcher's exception is answered with."""
    if isinstance(exc, DeadlineExceeded):
        return 504, "deadline_exceeded"
    if isinstance(exc, CannotMeetDeadline):
        return 503, "cannot_meet_deadline"
    if isinstance(exc, QueueFull):
        return 503, "node_queue_full"
    return 500, "model_error"


def _done(text: str, info: BatchInfo, model: str) -> dict[str, object]:
    return {"done": True, "translation": text, "model": model, "queue_ms": round(info.queue_ms, 3),
            "infer_ms": round(info.infer_ms, 3), "batch_size": info.size}


async def _events(batcher: DynamicBatcher[ModelInput, str] | ContinuousBatcher[ModelInput], item: ModelInput, *,
                  rank: int, deadline: float, model: str) -> AsyncIterator[dict[str, object]]:
    if isinstance(batcher, DynamicBatcher):
        text, info = await batcher.submit(item, rank=rank, deadline=deadline)
        if text:
            yield {"piece": text}
        yield _done(text, info, model)
        return
    row = batcher.enqueue(item, rank=rank, deadline=deadline)
    try:
        while (piece := await row.pieces.get()) is not None:
            yield {"piece": piece}
        text, info = await row.future
        yield _done(text, info, model)
    finally:
        row.drop()


def _line(event: dict[str, object]) -> bytes:
    return (json.dumps(event, separators=(",", ":")) + "\n").encode()


async def _lines(first: dict[str, object], events: AsyncIterator[dict[str, object]]) -> AsyncIterator[bytes]:
    try:
        yield _line(first)
        async for event in events:
            yield _line(event)
    except Exception as exc:  # noqa: BLE001 (after the status line the error is the last line)
        status, code = error_for(exc)
        yield _line({"error": {"status": status, "code": code, "message": str(exc)}})
    finally:
        await events.aclose()  # type: ignore[attr-defined]


async def stream_answer(batcher: DynamicBatcher[ModelInput, str] | ContinuousBatcher[ModelInput], item: ModelInput,
                        *, rank: int, deadline: float, model: str) -> Response:
    """The streamed answer to one `/infer` call, or its error response when nothing was decoded."""
    events = _events(batcher, item, rank=rank, deadline=deadline, model=model)
    try:
        first = await events.__anext__()
    except Exception as exc:  # noqa: BLE001 (any refusal before a piece keeps its status)
        await events.aclose()  # type: ignore[attr-defined]
        status, code = error_for(exc)
        return error_json(status, code, str(exc))
    return StreamingResponse(_lines(first, events), media_type=NDJSON)
