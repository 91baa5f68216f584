"""A target that costs nothing: answers every HTTP request at once, on loopback only.

The harness's overhead check (`rushhour.scenarios.run.overhead`) fires the load generator at it, so
whatever latency the requests show is the harness's own: Locust, its HTTP client, result
recording, loopback. It speaks just enough of each protocol for the client to count a success:
a JSON body that reads as a rushhour answer and as a chat completion, and for a request asking
`"stream": true` one server-sent-events chunk, a finish chunk and `[DONE]`. Plain asyncio
streams keep it to one small process with no framework cost of its own.

Run as `python -m rushhour.scenarios.run.nullserver PORT`; it prints "ready" once listening.
"""

from __future__ import annotations

import asyncio
import sys

__all__ = ["answer"]

_JSON = (b'{"translation":"x","model":"null","choices":[{"index":0,"message":{"role":"assistant","content":"x"},'
         b'"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}')
_SSE = (b'data: {"model":"null","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        b'data: {"model":"null","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
        b'"usage":{"completion_tokens":1}}\n\ndata: [DONE]\n\n')


def answer(body: bytes) -> bytes:
    """The whole HTTP response to a request with this body (streamed when it asks to be)."""
    stream = b'"stream":true' in body.replace(b" ", b"")
    payload, kind = (_SSE, b"text/event-stream") if stream else (_JSON, b"application/json")
    return (b"HTTP/1.1 200 OK\r\ncontent-type: " + kind + b"\r\ncontent-length: "
            + str(len(payload)).encode() + b"\r\n\r\n" + payload)


async def _serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Keep-alive: answer each request on the connection until the client closes it."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:].strip() or 0)
            body = await reader.readexactly(length) if length else b""
            writer.write(answer(body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
        pass
    finally:
        writer.close()


async def _main(port: int) -> None:
    server = await asyncio.start_server(_serve_one, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_main(int(sys.argv[1])))
