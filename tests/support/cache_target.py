"""A ground-truth target with an exact-match cache: `python cache_target.py PORT DELAY_MS`.

A text it has answered before is answered at once with `"cached": true` (the reference server's
field); a new text is answered DELAY_MS after it arrived with `"cached": false` and remembered.
So a test knows which arm answered from cache and why: one that saw the night's texts before.
Standard library only; listens on 127.0.0.1; the memory is bounded (MAX_TEXTS, then forgotten).
"""

from __future__ import annotations

import asyncio
import json
import sys

MAX_TEXTS = 200_000


def _response(status: int, body: bytes) -> bytes:
    reason = {200: "OK", 404: "Not Found"}[status]
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode("ascii") + body


def _answer(cached: bool) -> bytes:
    return json.dumps({"translation": "ok", "model": "quality", "cached": cached, "degraded": False,
                       "node": "cache-0"}).encode()


async def main(port: int, delay_s: float) -> None:
    seen: set[str] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = asyncio.get_running_loop().time()
                lines = head.decode("latin-1").split("\r\n")
                length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:])
                               if k.strip().lower() == "content-length"), 0)
                body = await reader.readexactly(length) if length else b""
                if not lines[0].startswith("POST"):
                    writer.write(_response(404, b'{"error": {"code": "not_found", "message": "POST only"}}'))
                else:
                    text = str(json.loads(body or b"{}").get("text", ""))
                    hit = text in seen
                    if not hit:
                        if len(seen) >= MAX_TEXTS:
                            seen.clear()
                        seen.add(text)
                        await asyncio.sleep(max(0.0, arrived + delay_s - asyncio.get_running_loop().time()))
                    writer.write(_response(200, _answer(hit)))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]) / 1000.0))
