"""A ground-truth target that answers in a known time: `python timed_target.py PORT DELAY_MS [FAIL_EVERY]`.

Every POST is answered exactly DELAY_MS after it arrived (no queue: each request waits on its own),
in the rushhour protocol's shape, so a test knows what latency the harness must see. With
FAIL_EVERY = k, every k-th request after the first (the probe's) is answered at once with a 503,
the shape of a service shedding load. Standard library only; listens on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

OK_BODY = b'{"translation": "ok", "model": "quality", "cached": false, "degraded": false, "node": "timed-0"}'
SHED_BODY = b'{"error": {"code": "overloaded", "message": "shed on purpose by the test target"}}'


def _response(status: int, body: bytes) -> bytes:
    reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            + ("Retry-After: 1\r\n" if status == 503 else "") + "\r\n")
    return head.encode("ascii") + body


async def main(port: int, delay_s: float, fail_every: int) -> None:
    counter = itertools.count()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = asyncio.get_running_loop().time()
                lines = head.decode("latin-1").split("\r\n")
                length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:])
                               if k.strip().lower() == "content-length"), 0)
                if length:
                    await reader.readexactly(length)
                writer.write(await _answer(lines[0].startswith("POST"), next(counter), arrived, delay_s, fail_every))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


async def _answer(post: bool, index: int, arrived: float, delay_s: float, fail_every: int) -> bytes:
    if not post:
        return _response(404, b'{"error": {"code": "not_found", "message": "POST only"}}')
    if fail_every and index > 0 and index % fail_every == 0:
        return _response(503, SHED_BODY)
    await asyncio.sleep(max(0.0, arrived + delay_s - asyncio.get_running_loop().time()))
    return _response(200, OK_BODY)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]) / 1000.0, int(sys.argv[3]) if len(sys.argv) > 3 else 0))
