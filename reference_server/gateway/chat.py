"""OpenAI-compatible routes: `POST /v1/chat/completions` (plain or `stream: true` SSE) and `GET /v1/models`.

Both go through the same service as `/v1/translate` (rate limits, caches, admission, breakers,
fallback); see `openai_api` for how a chat request maps onto a translate request. Errors keep
the translate API's status codes in OpenAI's error shape; a stream refused before its first piece gets its
status, a failure after it ends the stream with an `error` chunk.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from rushhour.reference_server.gateway.api import (
    ApiError,
    TranslateRequest,
    error_response,
    openai_error_body,
)
from rushhour.reference_server.gateway.components import Gateway
from rushhour.reference_server.gateway.deps import GatewayDep
from rushhour.reference_server.gateway.metrics import bounded_label
from rushhour.reference_server.gateway.openai_api import (
    PRIORITY_HEADER,
    TENANT_HEADER,
    ChatRequest,
    chunk,
    completion,
    finish_reason,
    models_list,
    new_id,
    to_translate,
    usage,
)
from rushhour.reference_server.gateway.pieces import PieceStream

router = APIRouter(tags=["openai"])


@router.get("/v1/models")
async def models() -> dict[str, object]:
    """The tiers as OpenAI models: `quality`, `fast`, and `auto` (placement decides)."""
    return models_list()


@router.post("/v1/chat/completions")
async def chat_completions(chat: ChatRequest, request: Request, gateway: GatewayDep) -> Response:
    """Answer the last user message (its translation); `stream: true` sends chunks as decoded."""
    gateway.requests_total += 1
    started = time.monotonic()
    priority = request.headers.get(PRIORITY_HEADER) or chat.priority
    try:
        req = to_translate(chat, tenant=request.headers.get(TENANT_HEADER), priority=priority)
        if chat.stream:
            return await _stream(gateway, chat, req)
        answer = await gateway.service.translate(req)
    except ApiError as exc:
        _count(gateway, chat, priority, str(exc.status), "", started)
        return error_response(exc, openai=True)
    _count(gateway, chat, priority, "200", answer.model, started)
    extra = {"model": answer.model, "node": answer.node, "cached": answer.cached, "degraded": answer.degraded,
             "timing": answer.timing.model_dump()}
    return JSONResponse(completion(req, chat, answer.translation, extra))


def _count(gateway: Gateway, chat: ChatRequest, priority: str | None, status: str, model: str, started: float) -> None:
    """Count the request under the class it was served in (the header wins over the body field)."""
    classes = gateway.config.admission.classes
    priority = bounded_label(priority or gateway.config.admission.default_priority, classes)
    mode = bounded_label(chat.model, ("quality", "fast", "auto"))
    gateway.metrics.requests.labels(status, mode, priority, model).inc()
    gateway.metrics.request_seconds.labels(mode, priority).observe(time.monotonic() - started)


async def _stream(gateway: Gateway, chat: ChatRequest, req: TranslateRequest) -> Response:
    pieces = PieceStream(gateway.service, req, endpoint="chat", metrics=gateway.metrics)
    pieces.start()
    first = await pieces.first()  # raises ApiError: refused before any piece, so its own status
    return StreamingResponse(_chunks(chat, req, pieces, first), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def _data(payload: object) -> str:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"


async def _chunks(chat: ChatRequest, req: TranslateRequest, pieces: PieceStream, first: str | None) -> AsyncIterator[str]:
    ident = new_id()
    try:
        yield _data(chunk(ident, chat, {"role": "assistant", "content": ""}))
        if first is not None:
            yield _data(chunk(ident, chat, {"content": first}))
        async for piece in pieces.rest():
            yield _data(chunk(ident, chat, {"content": piece}))
        await pieces.result()
    except ApiError as exc:
        yield _data({"error": openai_error_body(exc)})
        return
    finally:
        await pieces.close()
    yield _data(chunk(ident, chat, {}, finish_reason(req)))
    if chat.stream_options is not None and chat.stream_options.include_usage:
        yield _data({**chunk(ident, chat, {}), "choices": [], "usage": usage(req)})
    yield "data: [DONE]\n\n"
