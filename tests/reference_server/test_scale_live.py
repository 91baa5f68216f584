"""Scale and reset calls racing on a running server: never a 500, and every node process tracked."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import psutil
import pytest

from tests.support.server import RunningServer

CONFIG = {"pools": {"quality": {"nodes": 1}, "fast": {"nodes": 1}}}


def _node_processes(server: RunningServer) -> set[int]:
    """Node processes the gateway has started and not yet reaped, whatever it believes."""
    children = psutil.Process(server.proc.pid).children()
    alive = set()
    for child in children:
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "rushhour.reference_server.node" in " ".join(child.cmdline()):
                alive.add(child.pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _tracked(server: RunningServer) -> dict[str, int]:
    return {str(n["id"]): int(n["pid"]) for n in server.status()["nodes"] if n.get("pid")}


@contextmanager
def _traffic(server: RunningServer, clients: int = 4) -> Iterator[None]:
    """Long fast-pool requests in flight all along, so every drain has something to wait for."""
    stop = threading.Event()
    ids = itertools.count()

    def client() -> None:
        with httpx.Client(base_url=server.url, timeout=30.0) as http:
            while not stop.is_set():
                text = f"Request {next(ids)}: " + "the parcel leaves the depot at dawn. " * 50
                try:
                    http.post("/v1/translate", json={"text": text, "source_lang": "en", "target_lang": "de", "mode": "fast"})
                except httpx.HTTPError:
                    pass

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=35)


def _call(server: RunningServer, op: tuple[str, int]) -> httpx.Response:
    kind, nodes = op
    if kind == "reset":
        return server.admin("POST", "/admin/reset")
    return server.admin("POST", "/admin/pools/fast/scale", {"nodes": nodes})


@pytest.mark.slow
def test_scale_live_racing_scales_and_resets_never_fail_and_leave_no_untracked_node(
    server_factory: Callable[..., RunningServer],
) -> None:
    server = server_factory(CONFIG)
    ops: list[tuple[str, int]] = [("scale", 3), ("scale", 0), ("reset", 0), ("scale", 2), ("reset", 0), ("scale", 1)]
    with _traffic(server), ThreadPoolExecutor(len(ops)) as pool:
        server.admin("POST", "/admin/pools/fast/scale", {"nodes": 3})
        responses: list[Any] = list(pool.map(lambda op: _call(server, op), ops))
    assert [r.status_code for r in responses] == [200] * len(ops), [r.text for r in responses]
    assert set(_tracked(server).values()) == _node_processes(server)
    final = server.admin("POST", "/admin/pools/fast/scale", {"nodes": 2})
    assert final.status_code == 200, final.text
    tracked = _tracked(server)
    assert sorted(i for i in tracked if i.startswith("fast-")) == ["fast-0", "fast-1"]
    assert set(tracked.values()) == _node_processes(server)
