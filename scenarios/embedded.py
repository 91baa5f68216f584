"""Boot, warm and stop the bundled reference server for a drill (`target: embedded`).

The server runs as our child process on a free loopback port with a fresh admin token, so a
drill never collides with another server on the machine and chaos experiments get the token
through the environment, as contracts.md says.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from scenarios.spec import EmbeddedTarget
from scenarios.variants import config_file_data, deep_merge

READY_WAIT_S = 180.0
STOP_GRACE_S = 15.0
WARM_REQUESTS = 8


class ServerError(RuntimeError):
    """The embedded server did not come up (or died); the log file says why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedServer:
    """The reference server as a child process; `url` and `token` once started."""

    def __init__(self, target: EmbeddedTarget, *, log_path: Path, base_dir: Path | None = None) -> None:
        self._target = target
        self._log_path = log_path
        self._base_dir = base_dir or Path.cwd()
        self.port = free_port()
        self.token = secrets.token_urlsafe(24)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        """Where an inline `server` config is written for the server (beside its log)."""
        return self._log_path.parent / "server-config.yaml"

    def _write_inline_config(self) -> None:
        source = str(self._target.config or "embedded target")
        data = deep_merge(config_file_data(self._target, self._base_dir, source), self._target.server or {})
        self.config_path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "scenarios.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        if self._target.server is not None:
            argv += ["--config", str(self.config_path.resolve())]
        elif self._target.config:
            argv += ["--config", str((self._base_dir / self._target.config).resolve())]
        if self._target.nodes is not None:
            argv += ["--nodes", str(self._target.nodes)]
        if self._target.max_batch_size is not None:
            argv += ["--max-batch-size", str(self._target.max_batch_size)]
        return argv

    def start(self, *, ready_wait_s: float = READY_WAIT_S) -> None:
        """Start the server and block until /readyz says 200."""
        env = dict(os.environ, RUSHHOUR_ADMIN_TOKEN=self.token, PYTHONUNBUFFERED="1")
        if self._target.server is not None:
            self._write_inline_config()
        with self._log_path.open("ab") as log:
            self._proc = subprocess.Popen(self.argv(), env=env, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True)
        self._wait_ready(ready_wait_s)

    def _wait_ready(self, limit_s: float) -> None:
        give_up = time.monotonic() + limit_s
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < give_up:
                if self._proc is not None and self._proc.poll() is not None:
                    raise ServerError(f"The reference server exited with code {self._proc.returncode} "
                                      f"before it was ready; see {self._log_path}.")
                try:
                    if client.get(f"{self.url}/readyz").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.3)
        raise ServerError(f"The reference server was not ready within {limit_s:.0f} s; see {self._log_path}.")

    def warm(self, languages: tuple[str, ...]) -> int:
        """A few real translations through the gateway, so the drill's first second is not cold."""
        source, target = languages[0].split("-")
        ok = 0
        with httpx.Client(timeout=30.0) as client:
            for i in range(WARM_REQUESTS):
                body = {"text": f"warm-up request number {i}.", "source_lang": source, "target_lang": target,
                        "mode": ("fast", "quality")[i % 2], "priority": "batch", "tenant": "rushhour-warmup",
                        "deadline_ms": 30000}
                try:
                    ok += client.post(f"{self.url}/v1/translate", json=body).status_code == 200
                except httpx.HTTPError:
                    pass
        return ok

    def anchor_schedules(self, t0: float) -> None:
        """Make the server's autoscale schedules count from the drill's start (best effort)."""
        try:
            httpx.post(f"{self.url}/admin/autoscale/epoch", json={"epoch": t0},
                       headers={"Authorization": f"Bearer {self.token}"}, timeout=5.0)
        except httpx.HTTPError:
            pass

    def stop(self, *, grace_s: float = STOP_GRACE_S) -> int | None:
        """SIGTERM (the server stops its nodes), SIGKILL if it will not go."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return proc.returncode if proc else None
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        return proc.returncode
