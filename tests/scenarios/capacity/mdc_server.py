"""A ground-truth service of known capacity: c workers, a fixed service time, first come first served.

Run as `python mdc_server.py PORT WORKERS SERVICE_MS` (loopback only). Every POST waits for a
free worker in arrival order, holds it for exactly SERVICE_MS and answers 200 with a small JSON
body, so under Poisson arrivals it is an M/D/c queue whose response-time percentiles the tests
compute by simulation. Anything else answers 404. Standard library only, so the process is cheap
and starts in a blink.
"""

from __future__ import annotations

import asyncio
import sys

BODY = b'{"translation": "ok", "model": "quality", "cached": false, "degraded": false, "node": "mdc-0"}'
NOT_FOUND = b'{"error": {"code": "not_found", "message": "Only POST is served here."}}'
MAX_BODY = 1 << 20


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, bool] | None:
    """(method, keep-alive) of the next request on the connection, its body read and dropped."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method = lines[0].split(" ", 1)[0]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    length = min(int(headers.get("content-length", "0") or 0), MAX_BODY)
    if length:
        await reader.readexactly(length)
    return method, headers.get("connection", "").lower() != "close"


def _response(status: int, body: bytes) -> bytes:
    reason = "OK" if status == 200 else "Not Found"
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            .encode("ascii") + body)


async def main(port: int, workers: int, service_s: float) -> None:
    free: asyncio.Queue[int] = asyncio.Queue()
    for worker in range(workers):
        free.put_nowait(worker)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, keep_alive = request
                if method != "POST":
                    writer.write(_response(404, NOT_FOUND))
                else:
                    worker = await free.get()  # waiters are woken in arrival order
                    try:
                        await asyncio.sleep(service_s)
                    finally:
                        free.put_nowait(worker)
                    writer.write(_response(200, BODY))
                await writer.drain()
                if not keep_alive:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000.0))
