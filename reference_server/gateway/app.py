"""The gateway's FastAPI application, assembled from its parts and its module-level routers.

Routes live in `public.py` (translate, probes, status, events, metrics), `jobs_api.py` (long
documents, streams), `chat.py` (OpenAI-compatible chat and models) and `admin.py` (drills'
controls); they reach the gateway's parts through the dependencies in `deps.py`.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from rushhour.reference_server.config import ServerConfig
from rushhour.reference_server.gateway import admin, chat, jobs_api, public
from rushhour.reference_server.gateway.api import (
    ApiError,
    handle_api_error,
    handle_http_error,
    handle_validation_error,
)
from rushhour.reference_server.gateway.bodylimit import BodyLimitMiddleware
from rushhour.reference_server.gateway.components import build_gateway, lifespan


def create_app(config: ServerConfig, *, admin_token: str) -> FastAPI:
    # No /docs or /redoc: FastAPI's pages load their scripts from a CDN; the schema stays at /openapi.json.
    app = FastAPI(title="rushhour reference translation server", version="0.1.0", lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.gateway = build_gateway(config, admin_token=admin_token)
    job_limits = dict.fromkeys(jobs_api.JOB_PATHS, jobs_api.body_limit(config))
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes, path_limits=job_limits)
    app.add_exception_handler(ApiError, handle_api_error)
    app.add_exception_handler(RequestValidationError, handle_validation_error)
    app.add_exception_handler(StarletteHTTPException, handle_http_error)
    for module in (public, jobs_api, chat, admin):
        app.include_router(module.router)
    return app
