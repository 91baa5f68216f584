"""Stand-in node processes for the gateway's Cluster: a small Python script per node instead of a
model replica (nothing listens, so health checks just fail), every process remembered and stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rushhour.reference_server.config import PoolConfig, ServerConfig
from rushhour.reference_server.gateway.cluster import Cluster
from rushhour.reference_server.gateway.metrics import Metrics
from rushhour.reference_server.gateway.nodes import NodeHandle

SLEEPER = "import time\nwhile True: time.sleep(1)\n"
"""A node that sleeps until it is signalled, and dies of SIGTERM at once."""
SLOW_EXIT = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(float(sys.argv[1])), sys.exit(0)))\n"
    "while True: time.sleep(1)\n"
)
"""A node that takes its first argument's seconds to exit after SIGTERM, as one finishing its last batch."""
REFUSES = "import sys; sys.exit(2)"
"""A node that exits at once with the refusal code, as one whose config asks for missing CUDA."""


class ScriptSpawner:
    """Starts `script` (with `args`) as each node's process; remembers every one it started."""

    def __init__(self, script: str = SLEEPER, *args: str) -> None:
        self.command = [sys.executable, "-c", script, *args]
        self.started: list[subprocess.Popen[bytes]] = []

    def __call__(self, node: NodeHandle, pool: PoolConfig, *, warm: bool,
                 model_cache_dir: Path | None) -> tuple[subprocess.Popen[bytes], int]:
        proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL)
        self.started.append(proc)
        return proc, 1  # the port: nothing listens there

    def alive(self) -> set[int]:
        return {p.pid for p in self.started if p.poll() is None}

    def stop_all(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def quality_cluster(spawner: ScriptSpawner, *, restart_backoff_s: float | None = None) -> Cluster:
    """A Cluster of one empty `quality` pool whose nodes `spawner` starts (the configured restart
    backoff unless one is given)."""
    pools = {"quality": PoolConfig(model="quality", nodes=0)}
    config = (ServerConfig(pools=pools) if restart_backoff_s is None
              else ServerConfig(pools=pools, restart_backoff_s=restart_backoff_s))
    return Cluster(config, Metrics(), spawn=spawner)


async def close_cluster(cluster: Cluster) -> None:
    """Close every node's client, then stop the cluster (its processes with it)."""
    for node in cluster.nodes.values():
        if node.client is not None:
            await node.client.aclose()
    await cluster.stop()
