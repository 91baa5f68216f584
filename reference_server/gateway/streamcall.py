"""The gateway's streaming call to a node: `/infer` with `"stream": true`, pieces handed on as they come.

The node answers NDJSON (see `rushhour.reference_server.node.streaming`). What comes back is shaped as a
plain `/infer` answer, so the service reads it the one way it reads every answer: a refusal
keeps its status and body, the closing `done` line becomes a 200 answer, and an `error` line
after some pieces becomes an answer with that line's status.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx

__all__ = ["PieceSink", "post_streaming"]


class PieceSink:
    """Where a request's pieces go; counts them, since a stream that has started cannot be retried
    elsewhere or served from a fallback without repeating what the client already has."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self.emitted = 0

    def __call__(self, piece: str) -> None:
        self.emitted += 1
        self._emit(piece)


async def post_streaming(client: httpx.AsyncClient, body: dict[str, object], *, timeout_s: float,
                         sink: PieceSink) -> httpx.Response:
    """POST a streaming `/infer`; hand each piece to `sink`; return the answer as a plain one.
    A stream that outlasts `timeout_s` raises `httpx.ReadTimeout`, as a plain call would."""
    request = client.build_request("POST", "/infer", json={**body, "stream": True}, timeout=timeout_s)
    try:
        async with asyncio.timeout(timeout_s):
            response = await client.send(request, stream=True)
            try:
                if response.status_code != 200:
                    await response.aread()
                    return response
                return await _read_lines(response, request, sink)
            finally:
                await response.aclose()
    except TimeoutError:
        raise httpx.ReadTimeout(f"The node's stream did not end within {timeout_s:.3f} s.", request=request) from None


async def _read_lines(response: httpx.Response, request: httpx.Request, sink: PieceSink) -> httpx.Response:
    async for line in response.aiter_lines():
        if not line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            raise httpx.RemoteProtocolError(f"The node sent a line that is not JSON: {line[:80]!r}.", request=request) from None
        if "piece" in event:
            sink(str(event["piece"]))
        elif event.get("done"):
            return httpx.Response(200, json=event, request=request)
        elif "error" in event:
            error = event["error"]
            return httpx.Response(int(error.get("status", 500)), json={"error": error}, request=request)
    raise httpx.RemoteProtocolError("The node's stream ended before its done line.", request=request)
