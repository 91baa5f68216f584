"""A service that is not rushhour's, of known capacity: `python own_service.py PORT WORKERS SERVICE_MS [PID_FILE]`.

Every POST waits for the first free of WORKERS workers in arrival order and holds it SERVICE_MS
(an M/D/c queue, as `benchmarks/mdc.py`), then answers in the rushhour protocol's shape; `GET
/healthz` answers 200 and `GET /count` the number of POSTs this process has served, so a test
sees what reached it. With PID_FILE it writes its own PID there once it listens, the way a daemon
does. Standard library only; listens on 127.0.0.1 (re-binding the port at once after a restart).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

BODY = b'{"translation": "ok", "model": "own", "cached": false, "degraded": false, "node": "own-0"}'


def _response(status: int, body: bytes) -> bytes:
    reason = {200: "OK", 404: "Not Found"}[status]
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode("ascii") + body


class Workers:
    """First come, first served over `count` workers each held `service_s` per request."""

    def __init__(self, count: int, service_s: float) -> None:
        self.free_at = [0.0] * count
        self.service_s = service_s
        self.served = 0

    def take(self, arrived: float) -> float:
        worker = min(range(len(self.free_at)), key=self.free_at.__getitem__)
        start = max(arrived, self.free_at[worker])
        self.free_at[worker] = start + self.service_s
        self.served += 1
        return start


async def _request(reader: asyncio.StreamReader) -> tuple[str, str, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = (lines[0].split(" ") + ["", ""])[:2]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    length = min(int(headers.get("content-length", "0") or 0), 1 << 20)
    if length:
        await reader.readexactly(length)
    return method, path, headers.get("connection", "").lower() != "close"


async def main(port: int, workers: int, service_s: float, pid_file: Path | None) -> None:
    pool = Workers(workers, service_s)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                method, path, keep_alive = await _request(reader)
                if method == "POST":
                    start = pool.take(time.monotonic())
                    await asyncio.sleep(max(0.0, start + service_s - time.monotonic()))
                    writer.write(_response(200, BODY))
                elif path == "/count":
                    writer.write(_response(200, str(pool.served).encode("ascii")))
                elif path == "/healthz":
                    writer.write(_response(200, b'{"ok": true}'))
                else:
                    writer.write(_response(404, b'{"error": {"code": "not_found", "message": "no such path"}}'))
                await writer.drain()
                if not keep_alive:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024, reuse_address=True)
    if pid_file is not None:
        tmp = pid_file.with_suffix(".tmp")
        tmp.write_text(str(os.getpid()), encoding="ascii")
        os.replace(tmp, pid_file)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000.0,
                     Path(sys.argv[4]) if len(sys.argv) > 4 else None))
