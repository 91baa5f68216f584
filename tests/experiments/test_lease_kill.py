"""A harness killed with SIGKILL while it holds a Redis stop for ten minutes: its renewals stop,
and the lease keeper, started before Redis was stopped, brings Redis back within the lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rushhour.experiments.local.redis import redis_running
from tests.support.redis import RedisServer, redis_or_skip
from tests.support.server import REPO

pytestmark = pytest.mark.slow
LEASE_S = 2.0
HOLDER = """
import json, sys, time
from rushhour.experiments.local.redis import stop_redis
print(json.dumps(stop_redis(port=int(sys.argv[1]), hold_s=600)), flush=True)
time.sleep(3600)
"""


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = redis_or_skip(tmp_path / "redis")
    yield server
    server.stop()


def test_sigkill_of_the_holder_during_stop_redis_brings_redis_back_within_the_lease(
    redis_server: RedisServer, tmp_path: Path,
) -> None:
    assert redis_server.proc is not None
    threading.Thread(target=redis_server.proc.wait, daemon=True).start()  # reap it once the holder stops it
    env = {**os.environ, "RUSHHOUR_LEASE_S": str(LEASE_S), "RUSHHOUR_LEASE_DIR": str(tmp_path / "leases"),
           "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(redis_server.port)], env=env, cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    restarted: psutil.Process | None = None
    try:
        stopped = json.loads(holder.stdout.readline())  # type: ignore[union-attr]
        assert stopped["stopped"] and stopped["lease_s"] == LEASE_S
        time.sleep(3 * LEASE_S)  # renewed: still down well past one lease
        assert redis_running(redis_server.port) is False, "the held stop ended while its holder was alive"
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        killed_at = time.monotonic()
        while not redis_running(redis_server.port) and time.monotonic() - killed_at < 30:
            time.sleep(0.1)
        assert redis_running(redis_server.port), "Redis was not back 30 s after its holder died"
        restarted = next(psutil.Process(c.pid) for c in psutil.net_connections("tcp")
                         if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == redis_server.port)
        psutil.Process(stopped["lease_keeper_pid"]).wait(timeout=10)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if restarted is not None:  # the Redis the lease keeper started: ours to stop
            restarted.terminate()
            restarted.wait(timeout=10)
