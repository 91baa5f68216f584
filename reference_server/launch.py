"""Run the reference server: in this process (`serve`), or as a child process (`ServerProcess`).

The one way rushhour boots its server. `rushhour serve` calls `serve`; drills, benchmarks and
tests start a `ServerProcess`, which runs `python -m rushhour.reference_server` on a loopback port,
waits for `/readyz`, and dies with its parent, so a killed harness leaves no server behind.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from rushhour.kernel.atomic import open_streamed
from rushhour.kernel.processes import child_env, die_with_parent, free_port, stop_process
from rushhour.reference_server.config import PoolConfig, ServerConfig
from rushhour.reference_server.listening import LaunchError, listen

__all__ = ["LaunchError", "ServerProcess", "listen", "serve"]

READY_WAIT_S = 180.0
STOP_GRACE_S = 15.0

log = logging.getLogger(__name__)


def serve(config: ServerConfig, *, log_level: str = "info") -> None:
    """Run the gateway (and through it every node) until SIGINT/SIGTERM."""
    import uvicorn

    from rushhour.reference_server.gateway.admin import resolve_admin_token
    from rushhour.reference_server.gateway.app import create_app

    logging.basicConfig(level=log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    _require_provider(config)
    token, token_path = resolve_admin_token(config.state_dir)
    if token_path is not None:
        print(f"rushhour: admin token written to {token_path}", file=sys.stderr)
    pools = ", ".join(f"{name}={_pool_summary(p)}" for name, p in config.pools.items())
    print(f"rushhour: serving on http://{config.host}:{config.port} (pools: {pools})", file=sys.stderr)
    sock = listen(config.host, config.port)
    app = create_app(config, admin_token=token)
    server_config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    uvicorn.Server(server_config).run(sockets=[sock])


def _pool_summary(pool: PoolConfig) -> str:
    if pool.kubernetes is not None:
        return f"{pool.model} on the endpoints of Service {pool.kubernetes.service}"
    if pool.remote:
        return f"{len(pool.remote)}x{pool.model} remote"
    return f"{pool.nodes}x{pool.model}"


def _require_provider(config: ServerConfig) -> None:
    """With `require_provider`, refuse to start (LaunchError: exit 2) unless a CUDA session really
    runs here, and hand the requirement to every node through the environment they inherit, so a
    node that still ends up on the CPU exits instead of serving."""
    from rushhour.reference_server.model.providers import REQUIRE_ENV, ProviderRequirementError, preflight

    os.environ[REQUIRE_ENV] = config.require_provider or ""
    if config.require_provider is None:
        return
    try:
        preflight(config.require_provider)
    except ProviderRequirementError as exc:
        raise LaunchError(str(exc)) from exc
    print(f"rushhour: require_provider {config.require_provider}: CUDA is in use for the quality tier", file=sys.stderr)


class ServerProcess:
    """The reference server as our child process on a free loopback port.

    `config_path` is a server config file (None: the defaults); `extra_args` are further
    `python -m rushhour.reference_server` flags (`--nodes`, `--max-batch-size`). `token` becomes
    `RUSHHOUR_ADMIN_TOKEN` for the server, so chaos actions and tests can call the admin API.
    """

    def __init__(self, *, log_path: Path, config_path: Path | None = None, token: str | None = None,
                 port: int | None = None, extra_args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 cwd: Path | None = None, log_level: str = "warning") -> None:
        self.log_path = log_path
        self.config_path = config_path
        self.token = token
        self.port = port or free_port()
        self._extra_args = list(extra_args)
        self._env = dict(env or {})
        self._cwd = cwd
        self._log_level = log_level
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "rushhour.reference_server", "--host", "127.0.0.1", "--port", str(self.port),
                "--log-level", self._log_level]
        if self.config_path is not None:
            argv += ["--config", str(self.config_path.resolve())]
        return argv + self._extra_args

    def start(self, *, ready_wait_s: float = READY_WAIT_S) -> None:
        """Start the server and block until `/readyz` answers 200."""
        env = child_env(keep=["RUSHHOUR_ADMIN_TOKEN"], extra={"PYTHONUNBUFFERED": "1", **self._env})
        if self.token is not None:
            env["RUSHHOUR_ADMIN_TOKEN"] = self.token
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open_streamed(self.log_path, append=True) as log_file:
            self.proc = subprocess.Popen(self.argv(), env=env, cwd=self._cwd, stdout=log_file, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent)
        try:
            self._wait_ready(ready_wait_s)
        except LaunchError:
            self.stop()
            raise

    def _wait_ready(self, limit_s: float) -> None:
        give_up = time.monotonic() + limit_s
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while time.monotonic() < give_up:
                if self.proc is not None and self.proc.poll() is not None:
                    raise LaunchError(f"The reference server exited with code {self.proc.returncode} before it was "
                                      f"ready; see {self.log_path}:\n{self.log_tail()}")
                try:
                    if client.get(f"{self.url}/readyz").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
        raise LaunchError(f"The reference server was not ready within {limit_s:.0f} s; see {self.log_path}:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, *, grace_s: float = STOP_GRACE_S) -> int | None:
        """SIGTERM (the gateway stops its nodes), SIGKILL if it will not go; returns the exit code."""
        return stop_process(self.proc, grace_s=grace_s, sig=signal.SIGTERM)
