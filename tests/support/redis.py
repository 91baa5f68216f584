"""Start a throw-away `redis-server` on a free loopback port for a test, and stop it by PID."""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import redis

from rushhour.kernel.processes import free_port, stop_process

SKIP_REASON = "needs redis-server (apt-get install redis-server)"


@dataclass
class RedisServer:
    port: int
    workdir: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> None:
        """Start (or start again, on the same port) a server that keeps nothing on disk."""
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip(SKIP_REASON)
        command = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.workdir)]
        log = (self.workdir / "redis.log").open("ab")
        self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if self.client().ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server on port {self.port} did not answer within {timeout_s} s.")

    def stop(self) -> None:
        """Stop our server, and a redis-server that a fault's undo started again on our port."""
        stop_process(self.proc, grace_s=10)
        self.proc = None
        for pid in _redis_listeners(self.port):
            restarted = psutil.Process(pid)
            restarted.terminate()
            restarted.wait(timeout=10)

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2.0)


def redis_or_skip(workdir: Path) -> RedisServer:
    if shutil.which("redis-server") is None:
        pytest.skip(SKIP_REASON)
    workdir.mkdir(parents=True, exist_ok=True)
    server = RedisServer(free_port(), workdir)
    server.start()
    return server


def _redis_listeners(port: int) -> list[int]:
    """PIDs of redis-server processes listening on `port` (a restarted server is a test's to stop too)."""
    pids = {c.pid for c in psutil.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid}
    return [pid for pid in pids if _name(pid) == "redis-server"]


def _name(pid: int) -> str | None:
    """The process's name, None once it has exited (between two looks, too)."""
    try:
        return psutil.Process(pid).name()
    except psutil.NoSuchProcess:
        return None
