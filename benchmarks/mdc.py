"""A ground-truth service of known capacity: c workers, a fixed service time, first come first served.

Run as `python benchmarks/mdc.py PORT WORKERS SERVICE_MS` (loopback only). Every POST waits for a
free worker in arrival order, holds it for exactly SERVICE_MS and answers 200 with a small JSON
body, so under Poisson arrivals it is an M/D/c queue. The server is standard library only (cheap,
starts in a blink); `simulated_p99_ms` and `true_capacity` give its P99 at any rate by
simulation, for the capacity test and benchmark to compare the search with.

`python benchmarks/mdc.py PORT WORKERS --stream FIRST_MS EVERY_MS TOKENS` streams instead, as an
OpenAI chat completion (server-sent events): a worker is held from the first token's prefill to
the last token, the first token FIRST_MS after the worker was free, then one every EVERY_MS. The
service time is FIRST_MS + (TOKENS - 1) x EVERY_MS, and the time to first token is the queue wait
plus FIRST_MS: its percentile is the response time's minus (service time - FIRST_MS).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import numpy as np

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


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n"


def _sse(event: dict[str, object]) -> bytes:
    return _chunk(b"data: " + json.dumps(event).encode("utf-8") + b"\n\n")


async def _sleep_until(deadline: float) -> None:
    await asyncio.sleep(max(0.0, deadline - time.monotonic()))


async def _stream(writer: asyncio.StreamWriter, stream: tuple[float, float, int], began: float) -> None:
    """One streamed chat completion; each token written at its time counted from the worker's start."""
    first_s, every_s, tokens = stream
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    for k in range(tokens):
        await _sleep_until(began + first_s + k * every_s)
        writer.write(_sse({"object": "chat.completion.chunk", "model": "mdc",
                           "choices": [{"index": 0, "delta": {"content": f"t{k} "}, "finish_reason": None}]}))
        await writer.drain()
    writer.write(_sse({"object": "chat.completion.chunk", "choices": [], "usage": {"completion_tokens": tokens}})
                 + _chunk(b"data: [DONE]\n\n") + _chunk(b""))


class Workers:
    """c identical workers served first come first served, kept on the clock rather than by the
    event loop: a request arriving at a starts at max(a, the earliest moment a worker is free) and
    holds that worker until exactly start + service. A loop that wakes late (a busy machine)
    delays that one answer's bytes, never the next request's start, so the queue stays M/D/c."""

    def __init__(self, count: int, service_s: float) -> None:
        self.free_at = [0.0] * count
        self.service_s = service_s

    def take(self, arrived: float) -> float:
        """The start of the request that arrived at `arrived` (monotonic seconds)."""
        worker = min(range(len(self.free_at)), key=self.free_at.__getitem__)
        start = max(arrived, self.free_at[worker])
        self.free_at[worker] = start + self.service_s
        return start


def _response(status: int, body: bytes) -> bytes:
    reason = "OK" if status == 200 else "Not Found"
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            .encode("ascii") + body)


async def main(port: int, workers: int, service_s: float, stream: tuple[float, float, int] | None = None) -> None:
    pool = Workers(workers, stream_service_ms(*stream) if stream else service_s)  # the same sum, in seconds

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, keep_alive = request
                if method != "POST":
                    writer.write(_response(404, NOT_FOUND))
                elif stream is not None:
                    await _stream(writer, stream, pool.take(time.monotonic()))
                else:
                    await _sleep_until(pool.take(time.monotonic()) + service_s)
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


def simulated_p99_ms(rate: float, *, workers: int, service_ms: float, arrivals: int = 300_000,
                     seed: int = 7, percentile: float = 99.0) -> float:
    """P99 (or `percentile`) response time of M/D/c at `rate` req/s, from one long simulated run.

    FCFS with equal service times: request i starts at max(arrival_i, start_{i-c} + D), so each
    residue class mod c is a Lindley recursion, a cumulative maximum in numpy.
    """
    service = service_ms / 1000.0
    arrive = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, arrivals))
    start = np.empty(arrivals)
    for lane in range(workers):
        times = arrive[lane::workers]
        offset = np.arange(times.size) * service
        start[lane::workers] = offset + np.maximum.accumulate(times - offset)
    return float(np.quantile(start + service - arrive, percentile / 100.0) * 1000.0)


def true_capacity(threshold_ms: float, *, workers: int, service_ms: float, percentile: float = 99.0) -> float:
    """The highest rate whose simulated P99 (or `percentile`) is within `threshold_ms` (bisection
    to 0.1 req/s)."""
    low, high = 1.0, workers * 1000.0 / service_ms
    while high - low > 0.1:
        middle = (low + high) / 2
        fits = simulated_p99_ms(middle, workers=workers, service_ms=service_ms, percentile=percentile) <= threshold_ms
        low, high = (middle, high) if fits else (low, middle)
    return low


def stream_service_ms(first_ms: float, every_ms: float, tokens: int) -> float:
    """How long a streamed answer holds its worker."""
    return first_ms + (tokens - 1) * every_ms


def true_ttft_capacity(threshold_ms: float, *, workers: int, stream: tuple[float, float, int],
                       percentile: float) -> float:
    """The highest rate whose simulated TTFT percentile is within `threshold_ms` in `--stream` mode.

    TTFT = queue wait + the first token's time, and the response time = queue wait + the whole
    stream, so the TTFT percentile is the response time's minus the rest of the stream.
    """
    service = stream_service_ms(*stream)
    return true_capacity(threshold_ms + service - stream[0], workers=workers, service_ms=service,
                         percentile=percentile)


if __name__ == "__main__":
    port_arg, workers_arg = int(sys.argv[1]), int(sys.argv[2])
    if sys.argv[3] == "--stream":
        first, every, count = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
        asyncio.run(main(port_arg, workers_arg, 0.0, (first / 1000.0, every / 1000.0, count)))
    else:
        asyncio.run(main(port_arg, workers_arg, float(sys.argv[3]) / 1000.0))
