"""Measurements behind `python -m benchmarks.server`: raw model, served load, cache hits.

Each function measures one thing and returns plain numbers; the bench module decides what to
compare and how to print it. Servers started here are always stopped by the context manager
that started them, and load goes only to the loopback address the server was bound to.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil
import yaml

from rushhour.kernel.quantiles import percentile_value
from rushhour.reference_server.config import ServerConfig
from rushhour.reference_server.launch import ServerProcess
from rushhour.reference_server.model import ModelInput, load_model
from rushhour.reference_server.model.samples import sample_text

__all__ = [
    "CacheHitResult",
    "BenchServer",
    "LoadResult",
    "LoadWindow",
    "RawModel",
    "bench_config",
    "cache_hits",
    "closed_loop",
    "distinct_texts",
    "running_server",
    "summarise",
]

REPO = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 20.0
UNLIMITED_RATE = 1e6


@dataclass(frozen=True)
class LoadResult:
    """Closed-loop load summed over its windows: completions counted by when they finished."""

    requests_per_s: float
    completed: int
    errors: int
    window_s: float
    latency_p50_ms: float
    latency_p99_ms: float
    mean_batch_size: float
    node_busy_share: float
    node_cpu_share: float
    node_cpu_s: float
    gateway_cpu_share: float
    client_cpu_share: float


@dataclass(frozen=True)
class BenchServer:
    url: str
    pid: int


@dataclass(frozen=True)
class _Snapshot:
    """The node's own counters, read from its /health (the gateway's copy lags by a poll), and
    the CPU seconds of node, gateway and this client process."""

    at: float
    batches: int
    items: int
    busy_s: float
    node_cpu_s: float
    gateway_cpu_s: float
    client_cpu_s: float


@dataclass(frozen=True)
class CacheHitResult:
    """Sequential cache hits: the server's own timing beside the client's round trip."""

    requests: int
    cached_share: float
    server_p50_ms: float
    server_p99_ms: float
    client_p50_ms: float
    client_p99_ms: float


def distinct_texts(count: int, chars: int, *, start: int = 0) -> list[str]:
    """`count` different texts of exactly `chars` characters, so none is a cache hit for another."""
    texts = []
    for i in range(start, start + count):
        prefix = f"{i:07d} "
        texts.append(prefix + sample_text(chars - len(prefix), i))
    return texts


class RawModel:
    """The quality model in this process, fed full batches of `batch_size` distinct texts."""

    def __init__(self, *, batch_size: int, chars: int, threads: int) -> None:
        self._model = load_model("quality", intra_op_threads=threads)
        texts = distinct_texts(batch_size * 16, chars)
        self._batches = [[ModelInput(t, "en", "de") for t in texts[i : i + batch_size]] for i in range(0, len(texts), batch_size)]
        self._model.translate_batch(self._batches[0])
        self.requests = 0
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def run(self, duration_s: float) -> None:
        """Translate whole batches back to back for `duration_s`, adding to the running totals."""
        done = 0
        started, cpu_started = time.perf_counter(), time.process_time()
        while time.perf_counter() - started < duration_s:
            batch = self._batches[done % len(self._batches)]
            self._model.translate_batch(batch)
            done += 1
            self.requests += len(batch)
        self.seconds += time.perf_counter() - started
        self.cpu_seconds += time.process_time() - cpu_started


def bench_config(*, max_batch_size: int, threads: int, cache: bool, warmup_lengths: list[int]) -> dict[str, Any]:
    """One quality node, no fast pool, tenant limits out of the way; the cache only when asked.
    The node batches dynamically, as `benchmarks.server` compares it with the raw model's batches
    (`benchmarks.batching` sets each mode it measures)."""
    classes = {
        name: {**cls.model_dump(), "rate_per_tenant": UNLIMITED_RATE, "burst_per_tenant": UNLIMITED_RATE, "max_wait_ms": 60_000}
        for name, cls in ServerConfig().admission.classes.items()
    }
    quality = {"model": "quality", "nodes": 1, "batching": "dynamic", "max_batch_size": max_batch_size, "intra_op_threads": threads,
               "warmup_lengths": warmup_lengths}
    return {
        "pools": {"quality": quality, "fast": None},
        "cache": {"enabled": cache},
        "admission": {"classes": classes, "early_reject": False},
    }


@contextmanager
def running_server(workdir: Path, config: dict[str, Any], *, extra_args: list[str] | None = None) -> Iterator[BenchServer]:
    """Boot the reference server on a free loopback port with `config`; yield it; always stop it."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "server.yaml"
    config_path.write_text(yaml.safe_dump(config))
    process = ServerProcess(log_path=workdir / "server.log", config_path=config_path, cwd=REPO,
                            extra_args=extra_args or [], env={"RUSHHOUR_STATE_DIR": str(workdir / "state")})
    try:
        process.start(ready_wait_s=READY_TIMEOUT_S)
        yield BenchServer(process.url, process.pid or 0)
    finally:
        process.stop(grace_s=STOP_TIMEOUT_S)


def _body(text: str) -> dict[str, Any]:
    return {"text": text, "source_lang": "en", "target_lang": "de", "mode": "quality", "priority": "paid",
            "tenant": "bench", "deadline_ms": 60_000}


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


async def _snapshot(client: httpx.AsyncClient, gateway_pid: int) -> _Snapshot:
    node = (await client.get("/v1/status")).json()["nodes"][0]
    health = (await client.get(f"http://127.0.0.1:{node['port']}/health")).json()
    return _Snapshot(
        time.perf_counter(), int(health["batches_total"]), int(health["batch_items_total"]), float(health["busy_s"]),
        _cpu_s(int(node["pid"])), _cpu_s(gateway_pid), _cpu_s(os.getpid()),
    )


@dataclass(frozen=True)
class LoadWindow:
    """One measured window of closed-loop load, before it is summed with the others."""

    completed: int
    errors: int
    window_s: float
    latencies_ms: list[float]
    first: _Snapshot
    last: _Snapshot


def summarise(windows: list[LoadWindow]) -> LoadResult:
    """Throughput over all windows together; shares are of the windows' total wall time."""
    completed = sum(w.completed for w in windows)
    window_s = sum(w.window_s for w in windows)
    elapsed = sum(w.last.at - w.first.at for w in windows)
    lat_ms = np.concatenate([w.latencies_ms for w in windows] + [[float("nan")] if completed == 0 else []])

    def delta(field: str) -> float:
        return float(sum(getattr(w.last, field) - getattr(w.first, field) for w in windows))

    return LoadResult(
        requests_per_s=completed / window_s,
        completed=completed,
        errors=sum(w.errors for w in windows),
        window_s=window_s,
        latency_p50_ms=percentile_value(lat_ms, 50),
        latency_p99_ms=percentile_value(lat_ms, 99),
        mean_batch_size=delta("items") / max(1.0, delta("batches")),
        node_busy_share=delta("busy_s") / elapsed,
        node_cpu_share=delta("node_cpu_s") / elapsed,
        node_cpu_s=delta("node_cpu_s"),
        gateway_cpu_share=delta("gateway_cpu_s") / elapsed,
        client_cpu_share=delta("client_cpu_s") / elapsed,
    )


async def _closed_loop(server: BenchServer, *, concurrency: int, chars: int, warmup_s: float, duration_s: float,
                       first_text: int) -> LoadWindow:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    finished: list[float] = []
    latencies: list[float] = []
    errors = 0
    counter = iter(range(first_text, first_text + 10**9))
    started = time.perf_counter()
    window_start, window_end = started + warmup_s, started + warmup_s + duration_s

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors
        while time.perf_counter() < window_end:
            text = distinct_texts(1, chars, start=next(counter))[0]
            sent = time.perf_counter()
            try:
                response = await client.post("/v1/translate", json=_body(text))
            except httpx.HTTPError:
                errors += 1
                continue
            done = time.perf_counter()
            if response.status_code != 200:
                errors += 1
                continue
            finished.append(done)
            if window_start <= done < window_end:
                latencies.append(done - sent)

    async def observe(client: httpx.AsyncClient) -> tuple[_Snapshot, _Snapshot]:
        await asyncio.sleep(window_start - time.perf_counter())
        first = await _snapshot(client, server.pid)
        await asyncio.sleep(window_end - time.perf_counter())
        return first, await _snapshot(client, server.pid)

    async with (
        httpx.AsyncClient(base_url=server.url, limits=limits, timeout=60.0) as client,
        httpx.AsyncClient(base_url=server.url, timeout=10.0) as side,
    ):
        observing = asyncio.ensure_future(observe(side))
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        first, last = await observing
    done_at = np.asarray(finished)
    in_window = int(((done_at >= window_start) & (done_at < window_end)).sum())
    return LoadWindow(in_window, errors, duration_s, [x * 1000.0 for x in latencies], first, last)


def closed_loop(server: BenchServer, *, concurrency: int, chars: int, warmup_s: float, duration_s: float,
                first_text: int = 0) -> LoadWindow:
    """Saturate `server` with `concurrency` back-to-back clients sending distinct texts (numbered
    from `first_text`); count what finishes in the window after `warmup_s`."""
    return asyncio.run(
        _closed_loop(server, concurrency=concurrency, chars=chars, warmup_s=warmup_s, duration_s=duration_s, first_text=first_text)
    )


def cache_hits(server: BenchServer, *, texts: int, chars: int, max_requests: int, duration_s: float) -> CacheHitResult:
    """Warm the cache with `texts` texts, then request them one at a time and time each answer."""
    bodies = [_body(t) for t in distinct_texts(texts, chars, start=10**8)]
    server_ms: list[float] = []
    client_ms: list[float] = []
    cached = 0
    with httpx.Client(base_url=server.url, timeout=60.0) as client:
        for body in bodies:
            client.post("/v1/translate", json=body).raise_for_status()
        deadline = time.perf_counter() + duration_s
        while len(client_ms) < max_requests and time.perf_counter() < deadline:
            body = bodies[len(client_ms) % len(bodies)]
            sent = time.perf_counter()
            response = client.post("/v1/translate", json=body)
            client_ms.append((time.perf_counter() - sent) * 1000.0)
            response.raise_for_status()
            answer = response.json()
            server_ms.append(float(answer["timing"]["total_ms"]))
            cached += bool(answer["cached"])
    server_rt, client_rt = np.asarray(server_ms), np.asarray(client_ms)
    return CacheHitResult(
        requests=len(client_ms),
        cached_share=cached / len(client_ms),
        server_p50_ms=percentile_value(server_rt, 50),
        server_p99_ms=percentile_value(server_rt, 99),
        client_p50_ms=percentile_value(client_rt, 50),
        client_p99_ms=percentile_value(client_rt, 99),
    )
