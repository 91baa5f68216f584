"""The redis-down experiment's actions and probes, against a real throw-away redis-server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.local.redis import redis_running, start_redis, stop_redis
from rushhour.kernel.processes import free_port
from tests.support.redis import RedisServer, redis_or_skip
from tests.support.server import REPO, TOKEN


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = redis_or_skip(tmp_path / "redis")
    yield server
    server.stop()


@pytest.mark.slow
def test_stop_then_start_redis_by_port(redis_server: RedisServer) -> None:
    assert redis_running(redis_server.port) is True
    stopped = stop_redis(port=redis_server.port)
    assert stopped.items() >= {"port": redis_server.port, "pid": redis_server.proc.pid, "stopped": True}.items()  # type: ignore[union-attr]
    assert redis_running(redis_server.port) is False
    started = start_redis(port=redis_server.port)
    try:
        assert started["started"] is True and redis_running(redis_server.port) is True
        assert redis_server.client().ping()
        assert start_redis(port=redis_server.port) == {"port": redis_server.port, "started": False, "already_running": True}
        keeper = psutil.Process(stopped["lease_keeper_pid"])
        keeper.wait(timeout=10)  # Redis is back: the lease keeper has nothing left to do
    finally:
        psutil.Process(started["pid"]).terminate()
        psutil.Process(started["pid"]).wait(timeout=10)


@pytest.mark.slow
def test_stopped_redis_comes_back_by_its_lease_without_a_rollback(redis_server: RedisServer,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_LEASE_MARGIN_S", "1")
    monkeypatch.setenv("RUSHHOUR_LEASE_S", "1")
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(redis_server.workdir / "leases"))  # created private
    stopped = stop_redis(port=redis_server.port, hold_s=1, ttl_s=0.5)
    assert stopped["lease_s"] == 1.0 and redis_running(redis_server.port) is False
    keeper = psutil.Process(stopped["lease_keeper_pid"])
    give_up = time.monotonic() + 20
    while not redis_running(redis_server.port) and time.monotonic() < give_up:
        time.sleep(0.1)
    listener = next(c for c in psutil.net_connections("tcp")
                    if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == redis_server.port)
    try:
        assert redis_running(redis_server.port) is True
        keeper.wait(timeout=10)
    finally:
        restarted = psutil.Process(listener.pid)  # the Redis the lease keeper started: ours to stop
        restarted.terminate()
        restarted.wait(timeout=10)


def test_stop_redis_refuses_a_listener_that_is_not_redis() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(ActivityFailed, match="not redis-server"):
            stop_redis(port=port)
        assert redis_running(port) is True


def test_stop_redis_with_nothing_listening_fails() -> None:
    with pytest.raises(ActivityFailed, match="Nothing listens"):
        stop_redis(port=free_port())


@pytest.mark.slow
def test_chaos_run_of_redis_down_keeps_translations_served(redis_server: RedisServer, server_factory, tmp_path: Path) -> None:
    server = server_factory({"pools": {"fast": None, "quality": {"nodes": 1}}, "cache": {"redis_url": redis_server.url}})
    journal = tmp_path / "journal.json"
    env = {
        **os.environ, "RUSHHOUR_URL": server.url, "RUSHHOUR_ADMIN_TOKEN": TOKEN, "RUSHHOUR_REDIS_PORT": str(redis_server.port),
        "RUSHHOUR_FAULT_HOLD_S": "0.5", "RUSHHOUR_SLO_WINDOW_S": "0.5", "RUSHHOUR_SLO_P99_MS": "60000",
    }
    command = [
        str(Path(sys.executable).parent / "chaos"), "--no-version-check", "--no-log-file", "run",
        "--journal-path", str(journal), str(REPO / "experiments" / "redis-down.json"),
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180, cwd=REPO, check=False)
    record = json.loads(journal.read_text())
    restarted: dict[str, Any] = next((r["output"] for r in record["rollbacks"] if r["activity"]["name"] == "start-redis"), {})
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        assert record["status"] == "completed" and record["deviated"] is False
        outputs = {r["activity"]["name"]: r["output"] for r in record["run"]}
        assert outputs["redis-is-down"] is False
        assert outputs["translations-served-without-redis"] is True
        assert outputs["l2-errors-counted"] >= 1
        assert restarted["started"] is True and redis_running(redis_server.port)
    finally:
        if restarted.get("pid"):
            proc = psutil.Process(restarted["pid"])
            proc.terminate()
            proc.wait(timeout=10)
