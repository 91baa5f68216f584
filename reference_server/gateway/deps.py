"""FastAPI dependencies of the gateway's routes: its parts, and the admin bearer-token check.

Tests replace a part with `app.dependency_overrides[get_gateway] = ...`. The dependencies are
`async def` on purpose: FastAPI runs a plain `def` dependency in its thread pool, a thread hop
(about 90 us here) on every request.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request

from rushhour.reference_server.gateway.api import ApiError
from rushhour.reference_server.gateway.components import Gateway
from rushhour.reference_server.gateway.jobs import JobManager
from rushhour.reference_server.gateway.service import TranslationService


async def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]


async def get_service(gateway: GatewayDep) -> TranslationService:
    return gateway.service


async def get_jobs(gateway: GatewayDep) -> JobManager:
    return gateway.jobs


ServiceDep = Annotated[TranslationService, Depends(get_service)]
JobsDep = Annotated[JobManager, Depends(get_jobs)]


async def require_admin_token(request: Request, gateway: GatewayDep) -> None:
    """Admin calls carry `Authorization: Bearer <token>`; anything else is a 401."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), gateway.admin_token.encode()):
        raise ApiError(401, "unauthorized", "Admin calls need a valid bearer token.")
