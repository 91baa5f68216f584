"""What came back for one request, whatever the protocol: status, error, serving details, token times.

Every protocol turns its answer into an `Outcome`; the load generator writes it into the requests
table's columns. It lives with the protocols because they make it, and the load package only
records it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class TokenTiming:
    """When the tokens of a streamed answer arrived (monotonic, as `time.monotonic()`), how many
    there were, and the answer's own inter-token gaps (ms); `first_at` None: no token came."""

    first_at: float | None = None
    last_at: float | None = None
    output_tokens: int | None = None
    input_tokens: int | None = None
    """The prompt's tokens as the server counted them (openai-chat's `usage.prompt_tokens`), None if unsaid."""
    itl_p50_ms: float = float("nan")
    itl_p99_ms: float = float("nan")
    itl_max_ms: float = float("nan")


NO_TOKENS = TokenTiming()


@dataclass(frozen=True)
class Outcome:
    """What came back for one request (status 0 = no HTTP response at all)."""

    status: int
    error: str = ""
    model: str = ""
    cached: bool = False
    degraded: bool = False
    node: str = ""
    first_segment_at: float | None = None
    """Monotonic time (time.monotonic()) the first finished segment was seen; jobs only."""
    tokens: TokenTiming = NO_TOKENS
    """Generative targets: output tokens and, when streamed, when they arrived."""
    text: str = ""
    """The answer's text where the protocol reads it (openai-chat), for the next turn of a conversation."""


def outcome_from(status: int, body: bytes | str | None, error: str = "") -> Outcome:
    """Turn an HTTP status and JSON body (success or error shape) into an Outcome."""
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    if 200 <= status < 300:
        return Outcome(
            status=status, model=str(data.get("model") or ""), cached=bool(data.get("cached")),
            degraded=bool(data.get("degraded")), node=str(data.get("node") or ""),
        )
    detail = data.get("error")
    code = detail.get("code") if isinstance(detail, dict) else None
    return Outcome(status=status, error=str(code or error or f"http {status}"))
