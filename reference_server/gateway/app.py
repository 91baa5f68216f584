"""The gateway's FastAPI application: public API, probes, metrics, status and admin routes."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from reference_server.config import ServerConfig
from reference_server.gateway.admin import admin_router
from reference_server.gateway.api import (
    ApiError, ErrorResponse, TranslateRequest, TranslateResponse, error_response,
    handle_api_error, handle_http_error, handle_validation_error,
)
from reference_server.gateway.autoscaler import Autoscaler
from reference_server.gateway.bodylimit import BodyLimitMiddleware
from reference_server.gateway.cluster import Cluster
from reference_server.gateway.jobs import JobManager
from reference_server.gateway.jobs_api import jobs_router
from reference_server.gateway.metrics import Metrics
from reference_server.gateway.service import TranslationService
from reference_server.gateway.status import build_status

log = logging.getLogger("rushhour.gateway")
ERRORS = {code: {"model": ErrorResponse} for code in (400, 413, 422, 429, 503, 504)}


def create_app(config: ServerConfig, *, admin_token: str) -> FastAPI:
    metrics = Metrics()
    events: deque[dict[str, object]] = deque(maxlen=2000)

    sequence = itertools.count(1)

    def on_event(event: dict[str, object]) -> None:
        event = {"seq": next(sequence), "wall": time.time(), **event}
        events.append(event)
        log.info("%s", json.dumps(event, default=str))

    cluster = Cluster(config, metrics, on_event=on_event)
    service = TranslationService(config, cluster, metrics)
    autoscaler = Autoscaler(config, cluster, service.dispatchers, metrics)
    jobs = JobManager(
        config.jobs, translate=service.translate, segment_chars=config.max_chars, check=service._check,
        rank_of=lambda priority: config.admission.classes[priority].rank,
    )
    counters = {"requests": 0}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await cluster.start()
        poker = asyncio.get_running_loop().create_task(service.poke_forever())
        autoscaler.start()
        try:
            yield
        finally:
            poker.cancel()
            await autoscaler.stop()
            await jobs.close()
            if service.l2 is not None:
                await service.l2.close()
            await cluster.stop()

    app = FastAPI(title="rushhour reference translation server", version="0.1.0", lifespan=lifespan)
    app.state.cluster, app.state.service, app.state.events, app.state.config = cluster, service, events, config
    app.state.autoscaler = autoscaler
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes)
    app.add_exception_handler(ApiError, handle_api_error)
    app.add_exception_handler(RequestValidationError, handle_validation_error)
    app.add_exception_handler(StarletteHTTPException, handle_http_error)

    @app.post("/v1/translate", response_model=TranslateResponse, responses=ERRORS)
    async def translate(req: TranslateRequest) -> Response:
        counters["requests"] += 1
        started = time.monotonic()
        priority = req.priority or config.admission.default_priority
        try:
            result = await service.translate(req)
        except ApiError as exc:
            metrics.requests.labels(str(exc.status), req.mode, priority, "").inc()
            metrics.request_seconds.labels(req.mode, priority).observe(time.monotonic() - started)
            return error_response(exc)
        metrics.requests.labels("200", req.mode, priority, result.model).inc()
        metrics.request_seconds.labels(req.mode, priority).observe(time.monotonic() - started)
        return JSONResponse(result.model_dump(exclude_none=True))

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> Response:
        ready = cluster.ready()
        return JSONResponse({"ready": ready}, status_code=200 if ready else 503)

    @app.get("/v1/status")
    async def status() -> dict[str, object]:
        body = build_status(cluster, service, counters["requests"])
        if service.l2 is not None:
            body["cache"].update(service.l2.status())  # type: ignore[attr-defined]
        for name, view in autoscaler.status().items():
            body["pools"][name]["autoscaler"] = view  # type: ignore[index]
        return body

    @app.get("/v1/events")
    async def recent_events(after: int = 0, limit: int = 500) -> dict[str, object]:
        """Supervisor, breaker, fault and scale events with a sequence number above `after`."""
        newer = [e for e in events if int(e["seq"]) > after][: max(1, min(limit, 2000))]  # type: ignore[call-overload]
        return {"events": newer}

    @app.get("/metrics")
    async def prometheus_metrics() -> Response:
        for name in config.pools:
            nodes = cluster.pool_nodes(name)
            metrics.nodes.labels(name, "true").set(sum(1 for n in nodes if n.state == "ready"))
            metrics.nodes.labels(name, "false").set(sum(1 for n in nodes if n.state != "ready"))
        for node in cluster.nodes.values():
            active = {f["kind"] for f in node.transport.active()} if node.transport else set()
            for kind in ("partition", "latency", "errors"):
                metrics.faults.labels(node.id, kind).set(1 if kind in active else 0)
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(jobs_router(jobs, service))
    app.include_router(admin_router(admin_token))
    return app
