"""HTTP face of a node: `POST /infer` into the batcher, `GET /health` for the gateway's supervisor,
`GET /healthz` (the process answers) and `GET /readyz` (warmed and serving) for Kubernetes probes.

The routes sit on a module-level router and reach the node's worker and batcher on the app's
state; `create_node_app` only builds those two and assembles the app. A node is plain Starlette:
it has four routes that read their own bodies, and FastAPI's import (models built for an OpenAPI
schema the node never serves) would add a tenth of a second to every node's start. The
batcher is the dynamic one or, with `batching: continuous`, the continuous one; `/infer` with
`"stream": true` answers NDJSON lines (see `rushhour.reference_server.node.streaming`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router

from rushhour.reference_server.batcher import (
    CannotMeetDeadline,
    DeadlineExceeded,
    DynamicBatcher,
    QueueFull,
)
from rushhour.reference_server.continuous import ContinuousBatcher
from rushhour.reference_server.gateway.bodylimit import BodyLimitMiddleware
from rushhour.reference_server.model import ModelInput
from rushhour.reference_server.model.rows import row_steps
from rushhour.reference_server.model.tokenizer import CHARS_PER_PIECE
from rushhour.reference_server.node.model_worker import ModelWorker
from rushhour.reference_server.node.protocol import (
    MAX_BODY_BYTES,
    NODE_TOKEN_HEADER,
    SLOWDOWN_HEADER,
    from_gateway,
    node_token,
)
from rushhour.reference_server.node.streaming import error_json, stream_answer

FIXED_COST_CHARS = 40  # a batch's time grows with its longest text, plus a fixed part per step


@dataclass(frozen=True)
class Node:
    worker: ModelWorker
    batcher: DynamicBatcher[ModelInput, str] | ContinuousBatcher[ModelInput]
    token: str = ""


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


_error = error_json


async def infer(request: Request) -> Response:
    node = _node(request)
    worker, settings = node.worker, node.worker.settings
    if worker.state != "ready":
        return _error(503, "not_ready", f"Node {settings.node_id} is {worker.state}.")
    try:
        body = json.loads(await request.body())
        cap = body.get("max_tokens")
        item = ModelInput(str(body["text"]), str(body["source_lang"]), str(body["target_lang"]),
                          None if cap is None else int(cap))
        rank = int(body.get("rank", 0))
        budget_ms = float(body.get("budget_ms", 60_000))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return _error(400, "bad_request", f"The node could not read the request: {exc}.")
    deadline = time.monotonic() + budget_ms / 1000.0
    if from_gateway(request.headers.get(NODE_TOKEN_HEADER), node.token):  # nobody else sets the speed
        worker.slow_down_from(request.headers.get(SLOWDOWN_HEADER))
    if body.get("stream"):
        return await stream_answer(node.batcher, item, rank=rank, deadline=deadline, model=worker.model_name)
    try:
        output, info = await node.batcher.submit(item, rank=rank, deadline=deadline)
    except DeadlineExceeded as exc:
        return _error(504, "deadline_exceeded", str(exc))
    except CannotMeetDeadline as exc:
        return _error(503, "cannot_meet_deadline", str(exc))
    except QueueFull as exc:
        return _error(503, "node_queue_full", str(exc))
    return JSONResponse(
        {
            "translation": output,
            "model": worker.model_name,
            "queue_ms": round(info.queue_ms, 3),
            "infer_ms": round(info.infer_ms, 3),
            "batch_size": info.size,
        }
    )


def source_tokens(item: ModelInput) -> int:
    """What a row takes of the token budget: its source tokens (language token + 4-char chunks)."""
    return 1 + -(-len(item.text) // CHARS_PER_PIECE)


async def health(request: Request) -> Response:
    node = _node(request)
    worker, settings, batcher = node.worker, node.worker.settings, node.batcher
    stats = batcher.stats
    return JSONResponse(
        {
            "id": settings.node_id,
            "pool": settings.pool,
            "state": worker.state,
            "provider": worker.provider,
            "model": worker.model_name,
            "warm": settings.warm,
            "pid": os.getpid(),
            "cold_start_s": worker.cold_start_s,
            "first_request_ms": worker.first_request_ms,
            "queue_depth": batcher.queue_depth,
            "batches_total": stats.batches,
            "batch_items_total": stats.items,
            "expired_total": stats.expired,
            "cannot_meet_total": stats.cannot_meet,
            "busy_s": round(stats.busy_s, 6),
            "batching": settings.batching,
            "prefill_tokens_per_step": settings.max_prefill_tokens if settings.batching == "continuous" else 0,
            "active_rows": getattr(batcher, "active_rows", 0),
        }
    )


async def healthz(request: Request) -> Response:
    """Liveness: 200 while the process serves HTTP, even while it warms up."""
    worker = _node(request).worker
    return JSONResponse({"status": "alive", "id": worker.settings.node_id, "state": worker.state})


async def readyz(request: Request) -> Response:
    """Readiness: 200 once the model is loaded and warmed (a cold node: at once), 503 before."""
    worker = _node(request).worker
    body = {"ready": worker.state == "ready", "id": worker.settings.node_id, "state": worker.state}
    return JSONResponse(body, status_code=200 if worker.state == "ready" else 503)


router = Router([
    Route("/infer", infer, methods=["POST"]),
    Route("/health", health, methods=["GET"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
])


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    node: Node = app.state.node
    node.batcher.start()
    prepare = asyncio.get_running_loop().run_in_executor(None, node.worker.prepare)
    try:
        yield
    finally:
        prepare.cancel()
        await node.batcher.close()


def create_node_app(worker: ModelWorker, token: str | None = None) -> Starlette:
    """The node's app; `token` is the gateway's (default: `node_token()`, from the environment)."""
    settings = worker.settings
    batcher: DynamicBatcher[ModelInput, str] | ContinuousBatcher[ModelInput]
    if settings.batching == "continuous":
        batcher = ContinuousBatcher(
            worker.decode_step, max_batch_size=settings.max_batch_size, max_tokens=settings.max_batch_tokens,
            max_queue=settings.max_queue, cost=source_tokens, steps=row_steps,
        )
    else:
        batcher = DynamicBatcher(
            worker.run_batch,
            max_batch_size=settings.max_batch_size,
            max_queue_delay_ms=settings.max_queue_delay_ms,
            max_queue=settings.max_queue,
            cost=lambda item: len(item.text) + FIXED_COST_CHARS,
        )
    app = Starlette(routes=router.routes, lifespan=lifespan,
                    middleware=[Middleware(BodyLimitMiddleware, max_bytes=MAX_BODY_BYTES)])
    app.state.node = Node(worker, batcher, node_token() if token is None else token)
    return app
