"""A ground-truth target that answers in a known time: `python timed_target.py PORT DELAY_MS [FAIL_EVERY] [--remember]`.

Every POST is answered exactly DELAY_MS after it arrived (no queue: each request waits on its own),
in the rushhour protocol's shape, so a test knows what latency the harness must see. With
FAIL_EVERY = k, every k-th request after the first (the probe's) is answered at once with a 503,
the shape of a service shedding load. With `--remember` it is an exact-match cache instead: a text
it has answered before is answered at once with `"cached": true` (the reference server's field), a
new one DELAY_MS after it arrived with `"cached": false` and remembered (at most MAX_TEXTS, then
forgotten), so a test knows which arm answered from cache and why. `cache_target.py` starts it so.
Standard library only; listens on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Awaitable, Callable

OK_BODY = b'{"translation": "ok", "model": "quality", "cached": false, "degraded": false, "node": "timed-0"}'
SHED_BODY = b'{"error": {"code": "overloaded", "message": "shed on purpose by the test target"}}'
NOT_FOUND_BODY = b'{"error": {"code": "not_found", "message": "POST only"}}'
MAX_TEXTS = 200_000

Answer = Callable[[bytes, float, int], Awaitable[bytes]]
"""What a target answers a POST with, given its body, the loop time it arrived at and how many
requests (of any method) came before it on the server."""


def _response(status: int, body: bytes) -> bytes:
    reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            + ("Retry-After: 1\r\n" if status == 503 else "") + "\r\n")
    return head.encode("ascii") + body


async def _until(arrived: float, delay_s: float) -> None:
    await asyncio.sleep(max(0.0, arrived + delay_s - asyncio.get_running_loop().time()))


def timed(delay_s: float, fail_every: int) -> Answer:
    async def answer(body: bytes, arrived: float, index: int) -> bytes:
        if fail_every and index > 0 and index % fail_every == 0:
            return _response(503, SHED_BODY)
        await _until(arrived, delay_s)
        return _response(200, OK_BODY)

    return answer


def remembering(delay_s: float) -> Answer:
    seen: set[str] = set()

    async def answer(body: bytes, arrived: float, index: int) -> bytes:
        text = str(json.loads(body or b"{}").get("text", ""))
        hit = text in seen
        if not hit:
            if len(seen) >= MAX_TEXTS:
                seen.clear()
            seen.add(text)
            await _until(arrived, delay_s)
        return _response(200, json.dumps({"translation": "ok", "model": "quality", "cached": hit,
                                          "degraded": False, "node": "cache-0"}).encode())

    return answer


async def serve(port: int, answer: Answer) -> None:
    """Answer every POST on 127.0.0.1:`port` through `answer` (any other method: 404), keeping connections open."""
    counter = itertools.count()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = asyncio.get_running_loop().time()
                lines = head.decode("latin-1").split("\r\n")
                length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:])
                               if k.strip().lower() == "content-length"), 0)
                body = await reader.readexactly(length) if length else b""
                index, post = next(counter), lines[0].startswith("POST")
                writer.write(await answer(body, arrived, index) if post else _response(404, NOT_FOUND_BODY))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> None:
    remember = "--remember" in argv
    port, delay_ms, *rest = [a for a in argv if a != "--remember"]
    delay_s = float(delay_ms) / 1000.0
    answer = remembering(delay_s) if remember else timed(delay_s, int(rest[0]) if rest else 0)
    asyncio.run(serve(int(port), answer))


if __name__ == "__main__":
    main(sys.argv[1:])
