"""The OpenAI-compatible request and answer shapes of `/v1/chat/completions` and `/v1/models`.

A chat request is served as a translate request of its last user message: `model` picks the
mode (`quality`, `fast` or `auto`; the tiers' full names work too), `user` or the
`X-Rushhour-Tenant` header is the tenant, `X-Rushhour-Priority` (or a `priority` field) the
priority class; `source_lang`, `target_lang`, `deadline_ms` and `on_overload` may ride along as
extra fields (the `openai` client's `extra_body`). Token counts are the stand-in model's own:
a prompt token per 4 source characters plus the language token, one completion token per piece.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rushhour.reference_server.gateway.api import ApiError, OnOverload, TranslateRequest
from rushhour.reference_server.model.spec import SPECS
from rushhour.reference_server.model.tokenizer import CHARS_PER_PIECE, output_tokens

MODES = ("quality", "fast", "auto")
TENANT_HEADER = "x-rushhour-tenant"
PRIORITY_HEADER = "x-rushhour-priority"


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(str(part.get("text", "")) for part in self.content if part.get("type") == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """The fields served; other OpenAI fields (temperature, top_p, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=128)
    messages: list[ChatMessage] = Field(min_length=1, max_length=1024)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1, le=1_000_000)
    max_completion_tokens: int | None = Field(None, ge=1, le=1_000_000)
    user: str | None = Field(None, max_length=64)
    source_lang: str = Field("en", min_length=2, max_length=8)
    target_lang: str = Field("de", min_length=2, max_length=8)
    priority: str | None = Field(None, max_length=64)
    deadline_ms: float | None = Field(None, gt=0, le=600_000)
    on_overload: OnOverload = "reject"

    @property
    def cap(self) -> int | None:
        return self.max_completion_tokens if self.max_tokens is None else self.max_tokens


def mode_of(model: str) -> str:
    """The translate mode a chat `model` names; ApiError 422 names an unknown one."""
    names = {spec.name: tier for tier, spec in SPECS.items()}
    mode = names.get(model, model.removeprefix("rushhour-"))
    if mode not in MODES:
        raise ApiError(422, "model_not_found", f'The model "{model[:80]}" does not exist; models are {list(MODES)}.', param="model")
    return mode


def to_translate(chat: ChatRequest, *, tenant: str | None, priority: str | None) -> TranslateRequest:
    """The translate request a chat request stands for: its last user message."""
    text = next((m.text() for m in reversed(chat.messages) if m.role == "user"), "")
    if not text:
        raise ApiError(422, "invalid_field", 'Field "messages": there is no user message with text to answer.', param="messages")
    fields = {"text": text, "source_lang": chat.source_lang, "target_lang": chat.target_lang, "mode": mode_of(chat.model),
              "priority": priority or chat.priority, "tenant": tenant or chat.user or "anonymous",
              "deadline_ms": chat.deadline_ms, "on_overload": chat.on_overload, "max_tokens": chat.cap}
    try:
        return TranslateRequest.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error.get("loc", ()))
        raise ApiError(422, "invalid_field", f'Field "{field}": {error.get("msg")} (from the header or body).', param=field) from None


def usage(req: TranslateRequest) -> dict[str, int]:
    prompt = 1 + -(-len(req.text) // CHARS_PER_PIECE)
    completion = completion_tokens(req)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion_tokens(req: TranslateRequest) -> int:
    full = output_tokens(len(req.text))
    return full if req.max_tokens is None else min(full, req.max_tokens)


def finish_reason(req: TranslateRequest) -> str:
    return "length" if req.max_tokens is not None and req.max_tokens < output_tokens(len(req.text)) else "stop"


def new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def completion(req: TranslateRequest, chat: ChatRequest, text: str, extra: dict[str, object]) -> dict[str, object]:
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason(req), "logprobs": None}
    return {"id": new_id(), "object": "chat.completion", "created": int(time.time()), "model": chat.model,
            "choices": [choice], "usage": usage(req), "system_fingerprint": None, "rushhour": extra}


def chunk(ident: str, chat: ChatRequest, delta: dict[str, str], finish: str | None = None) -> dict[str, object]:
    return {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()), "model": chat.model,
            "system_fingerprint": None, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}


def models_list() -> dict[str, object]:
    created = int(time.time())
    return {"object": "list", "data": [{"id": mode, "object": "model", "created": created, "owned_by": "rushhour"} for mode in MODES]}
