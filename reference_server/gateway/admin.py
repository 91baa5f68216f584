"""Admin endpoints that chaos drills call. Every call needs `Authorization: Bearer <token>`.

Kill, restart and scale act on processes the gateway supervises; on a remote node or pool they
answer 409 `not_supervised` with what to do instead. Faults sit in the gateway, so they work on
every node."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from rushhour.kernel.atomic import write_text_atomic
from rushhour.reference_server.gateway.api import ApiError
from rushhour.reference_server.gateway.cluster import Cluster, NotSupervised, UnknownNode
from rushhour.reference_server.gateway.deps import GatewayDep, ServiceDep, require_admin_token
from rushhour.reference_server.gateway.faults import DEFAULT_TTL_S, FaultSpec
from rushhour.reference_server.gateway.nodes import NodeHandle

TOKEN_ENV = "RUSHHOUR_ADMIN_TOKEN"
MAX_EPOCH_S = 4_102_444_800.0  # 2100-01-01T00:00:00Z: later is no drill's start, and overflows date maths


def resolve_admin_token(state_dir: Path) -> tuple[str, Path | None]:
    """The token from the environment, else a fresh one written (mode 0600) to the state directory."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return token, None
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "admin_token"
    token = secrets.token_urlsafe(32)
    write_text_atomic(token + "\n", path, mode=0o600)  # never through a link planted at its name
    return token, path


class KillBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    restart: bool = Field(True, description="false: the supervisor leaves the node down until a restart or reset, "
                                            "or until ttl_s runs out")
    ttl_s: float | None = Field(None, gt=0, le=86_400, allow_inf_nan=False, description=(
        f"with restart false: the lease of the kill; the node comes back by itself after ttl_s seconds unless "
        f"renewed with POST /admin/nodes/{{id}}/lease (default {DEFAULT_TTL_S:g})"))


class LeaseBody(BaseModel):
    """Body of `POST /admin/nodes/{id}/lease`: renew what is held on a node."""

    model_config = ConfigDict(extra="forbid")
    ttl_s: float = Field(gt=0, le=86_400, allow_inf_nan=False,
                         description="every active fault of the node, and a kill held with restart false, "
                                     "now ends this many seconds from now unless renewed again")


class RestartBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    warm: bool = True


class EpochBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    epoch: float = Field(gt=0, le=MAX_EPOCH_S, allow_inf_nan=False, description="Unix time in seconds")


class ScaleBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: int = Field(ge=0, le=64)


def _node_view(node: NodeHandle) -> dict[str, object]:
    view: dict[str, object] = {"id": node.id, "pool": node.pool, "state": node.state, "pid": node.pid, "warm": node.warm}
    if node.remote:
        view.update(url=node.url, target=node.target)
    return view


def _node_or_404(cluster: Cluster, node_id: str) -> NodeHandle:
    try:
        return cluster.node(node_id)
    except UnknownNode as exc:
        raise ApiError(404, "unknown_node", str(exc)) from None


router = APIRouter(prefix="/admin", dependencies=[Depends(require_admin_token)], tags=["admin"])


@router.post("/nodes/{node_id}/kill")
async def kill(node_id: str, gateway: GatewayDep, body: KillBody | None = None) -> dict[str, object]:
    _node_or_404(gateway.cluster, node_id)
    try:
        spec = body or KillBody()
        ttl_s = None if spec.restart else (spec.ttl_s or DEFAULT_TTL_S)
        return _node_view(await gateway.cluster.kill(node_id, restart=spec.restart, ttl_s=ttl_s))
    except NotSupervised as exc:
        raise ApiError(409, "not_supervised", str(exc)) from None


@router.post("/nodes/{node_id}/lease")
async def renew(node_id: str, body: LeaseBody, gateway: GatewayDep) -> dict[str, object]:
    """Renew the lease of what is held on a node: its faults and a kill with `restart: false`.

    A harness holding a fault calls this every few seconds with a short `ttl_s`; when the calls
    stop (the harness died), the faults heal and the node comes back within `ttl_s`, however long
    the hold was meant to be. `held: false` means nothing is held any more: stop renewing."""
    node = _node_or_404(gateway.cluster, node_id)
    faults = node.transport.renew(body.ttl_s) if node.transport is not None else 0
    down = gateway.cluster.renew_down(node.id, body.ttl_s)
    return {"node": node.id, "held": bool(faults or down), "faults": faults, "held_down": down, "ttl_s": body.ttl_s}


@router.post("/nodes/{node_id}/restart")
async def restart(node_id: str, gateway: GatewayDep, body: RestartBody | None = None) -> dict[str, object]:
    _node_or_404(gateway.cluster, node_id)
    try:
        return _node_view(await gateway.cluster.restart(node_id, warm=(body or RestartBody()).warm))
    except NotSupervised as exc:
        raise ApiError(409, "not_supervised", str(exc)) from None


@router.post("/nodes/{node_id}/faults")
async def inject(node_id: str, spec: FaultSpec, gateway: GatewayDep) -> dict[str, object]:
    node = _node_or_404(gateway.cluster, node_id)
    if node.transport is None:
        raise ApiError(409, "node_not_started", f'Node "{node.id}" has no connection to inject a fault into yet.')
    node.transport.inject(spec)
    gateway.events.record({"type": "fault_injected", "node": node.id, **spec.model_dump()})
    return {"node": node.id, "faults": node.transport.active()}


@router.delete("/nodes/{node_id}/faults")
async def heal(node_id: str, gateway: GatewayDep) -> dict[str, object]:
    node = _node_or_404(gateway.cluster, node_id)
    if node.transport is not None:
        node.transport.heal()
    return {"node": node.id, "faults": []}


@router.post("/pools/{pool}/scale")
async def scale(pool: str, body: ScaleBody, gateway: GatewayDep) -> dict[str, object]:
    try:
        nodes = await gateway.cluster.scale(pool, body.nodes)
    except UnknownNode as exc:
        raise ApiError(404, "unknown_pool", str(exc)) from None
    except NotSupervised as exc:
        raise ApiError(409, "not_supervised", str(exc)) from None
    return {"pool": pool, "nodes": [_node_view(n) for n in nodes]}


@router.post("/cache/flush")
async def flush(service: ServiceDep) -> dict[str, object]:
    flushed = len(service.cache)
    service.cache.clear()
    result: dict[str, object] = {"flushed": flushed}
    if service.l2 is not None:
        result["l2_flushed"] = await service.l2.flush()
    return result


@router.post("/cache/save")
async def save_cache(service: ServiceDep) -> dict[str, object]:
    """Keep a copy of the L1 cache as it is now, for `POST /admin/cache/restore`."""
    return {"saved": service.cache.save()}


@router.post("/cache/restore")
async def restore_cache(service: ServiceDep) -> dict[str, object]:
    """Return the L1 cache to what the last `POST /admin/cache/save` kept, and empty this server's L2
    keys: each step of a capacity search starts from the same cache, however warm the last left it."""
    restored = service.cache.restore()
    if restored is None:
        raise ApiError(409, "nothing_saved", "No cache was saved; POST /admin/cache/save first.")
    result: dict[str, object] = {"restored": restored}
    if service.l2 is not None:
        result["l2_flushed"] = await service.l2.flush()
    return result


@router.post("/jobs/cancel")
async def cancel_jobs(gateway: GatewayDep) -> dict[str, object]:
    """Stop every queued or running document job: a capacity search's step that ended leaves its
    documents' remaining segments queued, and the next step should not wait for them."""
    return {"cancelled": await gateway.jobs.cancel_all()}


@router.post("/autoscale/epoch")
async def autoscale_epoch(body: EpochBody, gateway: GatewayDep) -> dict[str, object]:
    """Anchor the autoscalers' schedules (`at_s`) at a wall time, e.g. a drill's start."""
    gateway.autoscaler.set_epoch(body.epoch)
    return {"epoch": body.epoch}


@router.post("/reset")
async def reset(gateway: GatewayDep) -> dict[str, object]:
    """Heal every fault, close every breaker, restore pool sizes, restart dead nodes now.

    A pool under an autoscaler is restored to the autoscaler's current target, not to its
    configured start size: a chaos rollback must not undo capacity the peak asked for."""
    cluster = gateway.cluster
    for node in cluster.nodes.values():
        if node.transport is not None:
            node.transport.heal()
        node.breaker.reset()
    targets = gateway.autoscaler.targets()
    for name, pool in cluster.config.pools.items():
        if pool.is_remote:
            continue  # sized where its nodes run
        size = targets.get(name, pool.nodes)
        if len(cluster.pool_nodes(name)) != size:
            await cluster.scale(name, size, reason="reset")
    for node in list(cluster.nodes.values()):
        if node.state == "down" and not node.remote:
            await cluster.restart(node.id, warm=True)
    return {"reset": True, "nodes": [_node_view(n) for n in cluster.nodes.values()]}
