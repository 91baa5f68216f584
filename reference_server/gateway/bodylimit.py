"""Refuse request bodies over a size limit (413) before anything parses them, and let the
client read the refusal.

The body is read here, whole, before the application sees it, so a chunked body is refused as
surely as one with a `Content-Length`. A refused client that is still sending (one that did not
ask `Expect: 100-continue`, such as Python's urllib) has the rest of its body read and dropped
before the answer, up to `LINGER_BYTES` and `LINGER_S`, as nginx's lingering close does: a
connection closed with unread data is reset, and the client sees a broken pipe, not the 413.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LINGER_BYTES = 16 * 2**20
LINGER_S = 5.0


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_bytes: int, path_limits: Mapping[str, int] | None = None) -> None:
        """`max_bytes` for every path but those in `path_limits` (exact paths)."""
        self.app = app
        self.max_bytes = max_bytes
        self.path_limits = dict(path_limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.path_limits.get(scope["path"], self.max_bytes)
        headers = dict(scope.get("headers", []))
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            if int(declared) <= LINGER_BYTES and b"100-continue" not in headers.get(b"expect", b"").lower():
                await _drain(receive, seen=0)
            await _refuse(send, limit)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before its body was complete: nobody to answer
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > limit:
                if more:
                    await _drain(receive, seen=len(body))
                await _refuse(send, limit)
                return
            if not more:
                break
        await self.app(scope, _replay(bytes(body), receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The whole body as one message, then the real channel (for disconnects)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _drain(receive: Receive, *, seen: int) -> None:
    """Read and drop what the client still sends, within the linger bounds."""
    try:
        async with asyncio.timeout(LINGER_S):
            while seen <= LINGER_BYTES:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
                seen += len(message.get("body", b""))
    except TimeoutError:
        return


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps({"error": {"code": "body_too_large", "message": f"The request body exceeds the limit of {limit} bytes."}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
