"""One node as the gateway sees it: its process (local nodes) or its URL (remote nodes), its client
(through the fault proxy), its breaker."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx

from rushhour.kernel.processes import child_env, stop_process
from rushhour.reference_server.config import PoolConfig
from rushhour.reference_server.defaults import default_batching
from rushhour.reference_server.gateway.breaker import CircuitBreaker
from rushhour.reference_server.gateway.faults import FaultTransport
from rushhour.reference_server.node.protocol import NODE_TOKEN_ENV, node_token

CONNECT_TIMEOUT_S = 0.25
EXIT_POLL_S = 0.02
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass  # not Linux: the node's own parent watchdog still applies


@dataclass
class NodeHandle:
    id: str
    pool: str
    index: int
    breaker: CircuitBreaker
    state: str = "starting"
    warm: bool = True
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    client: httpx.AsyncClient | None = None
    transport: FaultTransport | None = None
    provider: str = "unknown"
    batching: str = "unknown"
    model: str = ""
    restarts: int = 0
    inflight: int = 0
    queue_depth: int = 0
    batches_total: int = 0
    batch_items_total: int = 0
    expired_total: int = 0
    active_rows: int = 0
    health_read_at: float | None = None
    cold_start_s: float | None = None
    first_request_ms: float | None = None
    started_at: float = field(default_factory=time.monotonic)
    ready_since: float | None = None
    restart_at: float | None = None
    held_down: bool = False  # killed with restart=False: down until restart, reset or its lease ends
    removed: bool = False
    url: str | None = None  # a remote node's base URL; None for a node process of ours
    target: str | None = None  # what the remote address belongs to (a pod's name), when known
    misses: int = 0  # readiness polls of a remote node in a row that got no answer

    @property
    def remote(self) -> bool:
        return self.url is not None

    @property
    def base_url(self) -> str:
        return self.url if self.url is not None else f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def routable(self) -> bool:
        return self.state == "ready" and not self.removed and self.breaker.available()


def spawn_process(
    node: NodeHandle, pool: PoolConfig, *, warm: bool, model_cache_dir: Path | None
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a node process on a listening socket the gateway made, so no port can be taken
    between choosing it and binding it; the gateway keeps no copy of the socket, so a dead
    node refuses connections as a dead host would."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    sock.set_inheritable(True)
    command = [
        sys.executable, "-m", "rushhour.reference_server.node",
        "--id", node.id, "--pool", node.pool, "--tier", pool.model, "--fd", str(sock.fileno()),
        "--max-batch-size", str(pool.max_batch_size), "--max-queue-delay-ms", str(pool.max_queue_delay_ms),
        "--max-queue", str(pool.max_node_queue), "--threads", str(pool.intra_op_threads),
        "--batching", pool.batching or default_batching(pool.model), "--max-batch-tokens", str(pool.max_batch_tokens),
        "--max-prefill-tokens", str(pool.max_prefill_tokens),
        "--warmup-lengths", ",".join(str(n) for n in pool.warmup_lengths), "--parent-pid", str(os.getpid()),
    ]
    if not warm:
        command.append("--cold")
    if model_cache_dir is not None:
        command += ["--model-cache-dir", str(model_cache_dir)]
    try:
        proc = subprocess.Popen(
            command, pass_fds=(sock.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=_die_with_parent,
            env=child_env(extra={NODE_TOKEN_ENV: node_token()}),  # the gateway's token; no admin token, no cluster secret
        )
    finally:
        sock.close()
    return proc, port


class Spawner(Protocol):
    """How the supervisor starts a node's process: `spawn_process`, or a fake in tests."""

    def __call__(
        self, node: NodeHandle, pool: PoolConfig, *, warm: bool, model_cache_dir: Path | None
    ) -> tuple[subprocess.Popen[bytes], int]: ...


def make_client(base_url: str, *, node_timeout_s: float) -> tuple[httpx.AsyncClient, FaultTransport]:
    """A client for one node, local or remote, whose every call passes through the fault proxy."""
    inner = httpx.AsyncHTTPTransport(
        retries=0,
        limits=httpx.Limits(max_connections=512, max_keepalive_connections=256),
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],  # no Nagle stalls on reused connections
    )
    transport = FaultTransport(inner, connect_timeout_s=CONNECT_TIMEOUT_S)
    client = httpx.AsyncClient(
        transport=transport,
        base_url=base_url,
        trust_env=False,  # a node is reached directly, never through an HTTP(S)_PROXY
        timeout=httpx.Timeout(node_timeout_s, connect=CONNECT_TIMEOUT_S),
    )
    return client, transport


def kill_now(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL and reap at once; blocks only while the kernel ends the killed process."""
    stop_process(proc, grace_s=0)


async def stop_node_process(proc: subprocess.Popen[bytes] | None, *, graceful_s: float = 0.0) -> None:
    """SIGTERM with a grace period (or SIGKILL at once), then reap: no zombies, no orphans.

    It waits by polling on the event loop, never in a blocking `wait`, so a node that takes its
    time to exit cannot freeze the gateway's traffic."""
    if proc is None:
        return
    if proc.poll() is None and graceful_s > 0:
        proc.terminate()
        deadline = time.monotonic() + graceful_s
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(EXIT_POLL_S)
    if proc.poll() is None:
        proc.kill()
    while proc.poll() is None:
        await asyncio.sleep(EXIT_POLL_S)
