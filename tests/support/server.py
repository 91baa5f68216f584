"""Boot the reference server (`rushhour serve`) on a loopback port for a test, and stop it.

Every server started here is stopped by the fixture that started it, and the test can
check that no node process outlived it. `module_server` makes a module's one shared server
fixture, `reset_after_each` the autouse fixture that heals it after every test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from rushhour.kernel.processes import free_port
from rushhour.reference_server.launch import LaunchError, ServerProcess
from tests.support.processes import pids_alive

REPO = Path(__file__).resolve().parents[2]
TOKEN = "test-admin-token"

# Small and quick to boot: short warm-up, a quality pool of 2 and a fast pool of 1.
SMALL_CONFIG: dict[str, Any] = {
    "pools": {
        "quality": {"model": "quality", "nodes": 2, "max_batch_size": 8, "max_queue_delay_ms": 10, "warmup_lengths": [32]},
        "fast": {"model": "fast", "nodes": 1, "max_batch_size": 16, "max_queue_delay_ms": 5, "warmup_lengths": [32]},
    },
    "breaker": {"open_s": 1.0, "min_calls": 3, "window": 10},
    "restart_backoff_s": 0.2,
}


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


__all__ = ["REPO", "SMALL_CONFIG", "TOKEN", "RunningServer", "all_nodes_ready", "free_port", "merge", "module_server",
           "pids_alive", "reset_after_each", "start_server"]


@dataclass
class RunningServer:
    process: ServerProcess
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.url, timeout=30.0, trust_env=False)

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def proc(self):
        return self.process.proc

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    def translate(self, text: str, **fields: Any) -> httpx.Response:
        body = {"text": text, "source_lang": "en", "target_lang": "de", **fields}
        return self.client.post("/v1/translate", json=body)

    def status(self) -> dict[str, Any]:
        return self.client.get("/v1/status").json()

    def admin(self, method: str, path: str, json: Any = None, token: str | None = TOKEN) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.client.request(method, path, json=json, headers=headers)

    def node_pids(self) -> list[int]:
        return [int(n["pid"]) for n in self.status()["nodes"] if n.get("pid")]

    def wait_for(self, predicate: Any, *, timeout_s: float = 30.0, interval_s: float = 0.1) -> dict[str, Any]:
        """Poll /v1/status until `predicate(status)` holds; fail the test when it never does."""
        deadline = time.monotonic() + timeout_s
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            status = self.status()
            if predicate(status):
                return status
            time.sleep(interval_s)
        raise AssertionError(f"condition not reached within {timeout_s} s; last status: {status}")

    def stop(self) -> list[int]:
        """SIGTERM the gateway; return the node pids that were alive before, for orphan checks."""
        pids: list[int] = []
        if self.process.running():
            try:
                pids = self.node_pids()
            except httpx.HTTPError:
                pass
            self.process.stop(grace_s=20)
        self.client.close()
        return pids


def start_server(workdir: Path, config: dict[str, Any] | None = None, *, extra_args: list[str] | None = None,
                 timeout_s: float = 120.0) -> RunningServer:
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "server.yaml"
    config_path.write_text(yaml.safe_dump(merge(SMALL_CONFIG, config or {})))
    process = ServerProcess(log_path=workdir / "server.log", config_path=config_path, token=TOKEN, cwd=REPO,
                            extra_args=extra_args or [], env={"RUSHHOUR_STATE_DIR": str(workdir / "state")},
                            log_level="info")
    try:
        process.start(ready_wait_s=timeout_s)
    except LaunchError as exc:
        raise RuntimeError(str(exc)) from exc
    return RunningServer(process)


Config = dict[str, Any] | None
Status = dict[str, Any]


def module_server(name: str, config: Config | Callable[[pytest.FixtureRequest], Config] = None,
                  **start: Any) -> Any:
    """A module-scoped `server` fixture: one server booted in a folder named `name` with `config`
    (merged over SMALL_CONFIG; a function of the fixture request when it needs another fixture,
    e.g. the URLs of nodes started by the module), stopped when the module's tests are done.
    `start` goes to `start_server`. Assign it to `server` in the test module."""

    @pytest.fixture(scope="module")
    def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
        running = start_server(tmp_path_factory.mktemp(name), config(request) if callable(config) else config, **start)
        yield running
        running.stop()

    return server


def all_nodes_ready(status: Status) -> bool:
    return all(n["state"] == "ready" for n in status["nodes"])


def reset_after_each(*, flush_cache: bool = False, ready: Callable[[Status], bool] | None = None,
                     timeout_s: float = 30.0, check: Callable[[RunningServer], None] | None = None) -> Any:
    """An autouse fixture that heals the module's `server` after every test, so the next one finds
    it as the module promises: `POST /admin/reset` (faults healed, dead nodes restarted) answers
    200, then optionally the cache is flushed, `/v1/status` is awaited until `ready` holds, and
    `check(server)` asserts what else the module needs. Assign it to a name in the test module."""

    @pytest.fixture(autouse=True)
    def healed(server: RunningServer) -> Iterator[None]:
        yield
        reset = server.admin("POST", "/admin/reset")
        assert reset.status_code == 200, f"POST /admin/reset answered {reset.status_code}: {reset.text}"
        if flush_cache:
            flushed = server.admin("POST", "/admin/cache/flush")
            assert flushed.status_code == 200, f"POST /admin/cache/flush answered {flushed.status_code}: {flushed.text}"
        if ready is not None:
            server.wait_for(ready, timeout_s=timeout_s)
        if check is not None:
            check(server)

    return healed
