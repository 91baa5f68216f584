"""The gateway's public routes: translate, the probes, `/v1/status`, `/v1/events` and `/metrics`."""

from __future__ import annotations

import time
from typing import get_args

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rushhour.reference_server.gateway.api import (
    ApiError,
    ErrorResponse,
    TranslateRequest,
    TranslateResponse,
    error_response,
)
from rushhour.reference_server.gateway.components import Gateway
from rushhour.reference_server.gateway.deps import GatewayDep
from rushhour.reference_server.gateway.faults import FaultKind
from rushhour.reference_server.gateway.metrics import bounded_label
from rushhour.reference_server.gateway.status import build_status

ERRORS: dict[int | str, dict[str, object]] = {code: {"model": ErrorResponse} for code in (400, 413, 422, 429, 503, 504)}
FAULT_GAUGE_KINDS = tuple(kind for kind in get_args(FaultKind) if kind != "reset")  # a reset is a partition

router = APIRouter()


@router.post("/v1/translate", response_model=TranslateResponse, responses=ERRORS)
async def translate(req: TranslateRequest, gateway: GatewayDep) -> Response:
    gateway.requests_total += 1
    started = time.monotonic()
    classes = gateway.config.admission.classes
    priority = bounded_label(req.priority or gateway.config.admission.default_priority, classes)
    try:
        result = await gateway.service.translate(req)
    except ApiError as exc:
        status, model, answer = str(exc.status), "", error_response(exc)
    else:
        status, model, answer = "200", result.model, JSONResponse(result.model_dump(exclude_none=True))
    gateway.metrics.requests.labels(status, req.mode, priority, model).inc()
    gateway.metrics.request_seconds.labels(req.mode, priority).observe(time.monotonic() - started)
    return answer


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(gateway: GatewayDep) -> Response:
    ready = gateway.cluster.ready()
    return JSONResponse({"ready": ready}, status_code=200 if ready else 503)


@router.get("/v1/status")
async def status(gateway: GatewayDep) -> dict[str, object]:
    return build_status(gateway)


@router.get("/v1/events")
async def recent_events(gateway: GatewayDep, after: int = 0, limit: int = 500) -> dict[str, object]:
    """Supervisor, breaker, fault and scale events with a sequence number above `after`."""
    return {"events": gateway.events.after(after, limit)}


@router.get("/metrics")
async def prometheus_metrics(gateway: GatewayDep) -> Response:
    _refresh_cluster_gauges(gateway)
    return Response(generate_latest(gateway.metrics.registry), media_type=CONTENT_TYPE_LATEST)


def _refresh_cluster_gauges(gateway: Gateway) -> None:
    """Pool readiness and active faults are read from the cluster at scrape time."""
    metrics, cluster = gateway.metrics, gateway.cluster
    for name in gateway.config.pools:
        nodes = cluster.pool_nodes(name)
        metrics.nodes.labels(name, "true").set(sum(1 for n in nodes if n.state == "ready"))
        metrics.nodes.labels(name, "false").set(sum(1 for n in nodes if n.state != "ready"))
    for node in cluster.nodes.values():
        active = {f["kind"] for f in node.transport.active()} if node.transport else set()
        for kind in FAULT_GAUGE_KINDS:
            metrics.faults.labels(node.id, kind).set(1 if kind in active else 0)
