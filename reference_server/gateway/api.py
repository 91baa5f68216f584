"""Request and response models of the public HTTP API, and its JSON error shape."""

from __future__ import annotations

import json
from typing import Any, Literal

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

Mode = Literal["auto", "fast", "quality"]
OnOverload = Literal["reject", "fast", "cache"]


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="Text to translate.")
    source_lang: str = Field(min_length=2, max_length=8)
    target_lang: str = Field(min_length=2, max_length=8)
    mode: Mode = "auto"
    priority: str | None = Field(None, max_length=64, description="Priority class, e.g. paid, free, batch.")
    tenant: str = Field("anonymous", min_length=1, max_length=64)
    deadline_ms: float | None = Field(None, gt=0, le=600_000)
    on_overload: OnOverload = "reject"
    max_tokens: int | None = Field(None, ge=1, le=1_000_000, description="Decode at most this many output tokens.")


class Timing(BaseModel):
    queue_ms: float
    infer_ms: float
    total_ms: float


class TranslateResponse(BaseModel):
    translation: str
    model: str
    cached: bool
    degraded: bool
    node: str
    chars: int
    timing: Timing
    queue_position: int | None = None


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


class ApiError(Exception):
    """An error the gateway answers with its JSON error body."""

    def __init__(self, status: int, code: str, message: str, *, retry_after_s: float | None = None, **extra: object) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s
        self.extra = extra


def shorten(value: str, limit: int = 80) -> str:
    """A client's value as an error message quotes it: cut to `limit` characters, so that an
    error never echoes a huge input back."""
    return value if len(value) <= limit else f"{value[:limit]}... ({len(value)} characters)"


class ErrorJSONResponse(JSONResponse):
    """ASCII JSON: an error message that quotes a client's value (even a lone surrogate, which
    UTF-8 cannot encode) always renders."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


OPENAI_PATHS = ("/v1/chat/", "/v1/models")
OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 413: "invalid_request_error",
                422: "invalid_request_error", 429: "rate_limit_error", 503: "server_error", 504: "timeout_error"}


def openai_error_body(exc: ApiError) -> dict[str, object]:
    """OpenAI's error shape, with our code; extras (estimates, reasons) ride along."""
    kind = OPENAI_TYPES.get(exc.status, "server_error" if exc.status >= 500 else "invalid_request_error")
    return {"message": exc.message, "type": kind, "param": exc.extra.get("param"), "code": exc.code,
            **{k: v for k, v in exc.extra.items() if k != "param"}}


def error_response(exc: ApiError, *, openai: bool = False) -> JSONResponse:
    body: dict[str, object] = openai_error_body(exc) if openai else {"code": exc.code, "message": exc.message, **exc.extra}
    headers = {}
    if exc.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, int(exc.retry_after_s + 0.999)))
    return ErrorJSONResponse({"error": body}, status_code=exc.status, headers=headers)


def respond(request: Request, exc: ApiError) -> JSONResponse:
    """The error in the shape the path's clients expect: OpenAI's under `OPENAI_PATHS`, ours elsewhere."""
    return error_response(exc, openai=request.url.path.startswith(OPENAI_PATHS))


async def handle_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return respond(request, exc)


async def handle_validation_error(request: Request, exc: Exception) -> JSONResponse:
    """Malformed JSON is a 400; a missing or ill-typed field is a 422 that names the field."""
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return respond(request, ApiError(400, "malformed_json", "The request body is not valid JSON."))
    # A body that is no JSON object at all; a model-level validator's error (a value_error on
    # the whole body, e.g. "a latency fault needs latency_ms > 0") stays a 422 below.
    if errors and all(e.get("loc") == ("body",) and e.get("type") != "value_error" for e in errors):
        return respond(request, ApiError(400, "malformed_body", "The request body must be a JSON object."))
    parts = []
    for e in errors[:5]:
        field = ".".join(str(p) for p in e.get("loc", ())[1:]) or "body"
        parts.append(f'field "{field}": {e.get("msg")}')
    return respond(request, ApiError(422, "invalid_field", "; ".join(parts) + "."))


async def handle_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}.get(exc.status_code, "http_error")
    return respond(request, ApiError(exc.status_code, code, str(exc.detail)))
