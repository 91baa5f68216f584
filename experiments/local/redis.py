"""Chaos Toolkit actions and probes for the Redis that backs the reference server's L2 cache.

The fault is the loss of the shared cache: `stop_redis` stops the redis-server that listens on
the given port of this machine (127.0.0.1 only; nothing remote is ever touched), and
`start_redis` starts one again on the same port. The gateway must keep serving throughout,
counting L2 errors and backing off instead of waiting on a dead Redis.

Needs: the `redis-server` binary on PATH (for `start_redis`), and the rights to see and signal
the Redis process (the same user, or root). Every stop carries a lease: a detached keeper
process starts Redis again when it runs out, so a killed drill never leaves the cache down. The
restarted Redis is empty and keeps nothing on disk, which suits a cache; pass `command` to start it some other way.
"""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import time
import uuid
from typing import Any

import psutil
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from rushhour.experiments.client import client_from
from rushhour.experiments.leases import (
    hold_lease,
    lease_file,
    lease_s,
    new_lease_file,
    release,
    spawn_keeper,
    write_lease,
)

__all__ = ["l2_errors", "redis_running", "start_redis", "stop_redis", "translation_served_uncached"]

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 6379
DEFAULT_COMMAND = "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no"
WAIT_S = 10.0


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


def _listener(port: int) -> psutil.Process | None:
    """The process listening on `port` on this machine, if any."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            return psutil.Process(conn.pid)
    return None


def stop_redis(port: int = DEFAULT_PORT, hold_s: float = 0.0, ttl_s: float = 60.0, command: str = "",
               configuration: Configuration = None, secrets: Secrets = None) -> dict[str, Any]:
    """Stop the Redis behind the gateway's L2 cache: SIGTERM the redis-server listening on
    127.0.0.1:`port`, SIGKILL if it is still there after 10 s.

    port: the port of the Redis named in the server's `cache.redis_url`.
    hold_s: how long the experiment holds the fault; a short lease is renewed meanwhile (see `lease_s`).
    ttl_s: the lease when nothing is held.
    command: how the lease keeper starts Redis again (as for `start_redis`).

    Refuses when the listener is not a redis-server, so a wrong port never stops anything else.
    Undo with `start_redis` on the same port. Redis cannot time the fault out by itself, so a
    detached lease keeper, started before Redis is stopped, starts it again when the lease lapses
    unrenewed (a killed drill); it exits as soon as it has seen Redis stopped and back.
    """
    port = int(port)
    lease = lease_s(ttl_s, hold_s)
    proc = _listener(port)
    if proc is None:
        raise ActivityFailed(f"Nothing listens on {LOOPBACK}:{port}; there is no Redis to stop.")
    name = proc.name()
    if "redis" not in name.lower():
        raise ActivityFailed(f'The process listening on port {port} is "{name}" (pid {proc.pid}), not redis-server; not stopping it.')
    path = new_lease_file(f"redis-{port}", lease)
    keeper = spawn_keeper("start_redis", lease, {"port": port, "command": command, "lease_file": str(path)})
    hold_lease(f"redis|{port}", lambda seconds: write_lease(path, seconds), lease, float(hold_s))
    proc.terminate()
    try:
        proc.wait(timeout=WAIT_S)
    except psutil.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=WAIT_S)
    return {"port": port, "pid": proc.pid, "stopped": True, "lease_s": lease, "lease_keeper_pid": keeper}


def start_redis(
    port: int = DEFAULT_PORT, command: str = "", configuration: Configuration = None, secrets: Secrets = None
) -> dict[str, Any]:
    """Start Redis again on 127.0.0.1:`port` after `stop_redis`; nothing happens when something
    already listens there.

    port: the port to start it on.
    command: the command line to run, with `{port}` filled in; empty means an empty, disk-less
    `redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no`.
    """
    port = int(port)
    release(f"redis|{port}")
    lease_file(f"redis-{port}").unlink(missing_ok=True)  # undone: its keeper may go
    if _accepts(port):
        return {"port": port, "started": False, "already_running": True}
    argv = shlex.split((command or DEFAULT_COMMAND).format(port=port))
    if shutil.which(argv[0]) is None:
        raise ActivityFailed(f'Cannot start Redis: "{argv[0]}" is not on PATH (apt-get install redis-server).')
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ActivityFailed(f"redis-server exited with {proc.returncode} right after starting on port {port}.")
        if _accepts(port):
            return {"port": port, "pid": proc.pid, "started": True}
        time.sleep(0.05)
    raise ActivityFailed(f"redis-server did not accept connections on port {port} within {WAIT_S:.0f} s.")


def redis_running(port: int = DEFAULT_PORT, configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when something accepts connections on 127.0.0.1:`port`."""
    return _accepts(int(port))


def l2_errors(configuration: Configuration = None, secrets: Secrets = None) -> int:
    """The gateway's count of failed L2 (Redis) calls, from `/v1/status` (`cache.l2_errors`);
    0 when the server has no L2 cache configured."""
    status = client_from(configuration, secrets).get_json("/v1/status")
    return int(status.get("cache", {}).get("l2_errors", 0))


def translation_served_uncached(configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """Translate a sentence never asked before and say whether it was answered (200).

    A fresh text misses the in-process cache, so the request really goes through the L2 lookup
    (the path a dead Redis could break) and on to a node."""
    text = f"Order {uuid.uuid4().hex[:12]} ships today; the receipt follows by mail."
    body = {"text": text, "source_lang": "en", "target_lang": "de", "on_overload": "fast"}
    return client_from(configuration, secrets).request_raw("POST", "/v1/translate", body).status_code == 200
