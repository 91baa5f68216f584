"""Boot, warm and stop the bundled reference server for a drill (`target: embedded`).

The server runs as our child process on a free loopback port with a fresh admin token, so a
drill never collides with another server on the machine and chaos experiments get the token
through the environment.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import httpx
import yaml

from rushhour.kernel.atomic import write_text_atomic
from rushhour.reference_server.launch import ServerProcess
from rushhour.scenarios.protocols.admission import admitted_client
from rushhour.scenarios.spec.model import EmbeddedTarget
from rushhour.scenarios.spec.variants import config_file_data, deep_merge

READY_WAIT_S = 180.0
STOP_GRACE_S = 15.0
WARM_REQUESTS = 8


def loopback_client(timeout_s: float) -> httpx.Client:
    """A client for the embedded server: proxy variables ignored (the token stays on this
    machine), redirects never followed."""
    return admitted_client(timeout=timeout_s)


class EmbeddedServer:
    """The reference server as a child process; `url` and `token` once started."""

    def __init__(self, target: EmbeddedTarget, *, log_path: Path, base_dir: Path | None = None) -> None:
        self._target = target
        self._base_dir = base_dir or Path.cwd()
        self.token = secrets.token_urlsafe(24)
        self._process = ServerProcess(log_path=log_path, config_path=self._config_file(log_path), token=self.token,
                                      extra_args=self._shorthand_args())

    @property
    def port(self) -> int:
        return self._process.port

    @property
    def url(self) -> str:
        return self._process.url

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def config_path(self) -> Path:
        """Where an inline `server` config is written for the server (beside its log)."""
        return self._process.log_path.parent / "server-config.yaml"

    def _config_file(self, log_path: Path) -> Path | None:
        if self._target.server is not None:
            return log_path.parent / "server-config.yaml"
        if self._target.config:
            return (self._base_dir / self._target.config).resolve()
        return None

    def _shorthand_args(self) -> list[str]:
        args: list[str] = []
        if self._target.nodes is not None:
            args += ["--nodes", str(self._target.nodes)]
        if self._target.max_batch_size is not None:
            args += ["--max-batch-size", str(self._target.max_batch_size)]
        return args

    def _write_inline_config(self) -> None:
        source = str(self._target.config or "embedded target")
        data = deep_merge(config_file_data(self._target, self._base_dir, source), self._target.server or {})
        write_text_atomic(yaml.safe_dump(data, sort_keys=False), self.config_path)

    def argv(self) -> list[str]:
        return self._process.argv()

    def start(self, *, ready_wait_s: float = READY_WAIT_S) -> None:
        """Start the server and block until /readyz says 200."""
        if self._target.server is not None:
            self._write_inline_config()
        self._process.start(ready_wait_s=ready_wait_s)

    def warm(self, languages: tuple[str, ...]) -> int:
        """A few real translations through the gateway, so the drill's first second is not cold."""
        source, target = languages[0].split("-")
        ok = 0
        with loopback_client(30.0) as client:
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
            with loopback_client(5.0) as client:
                client.post(f"{self.url}/admin/autoscale/epoch", json={"epoch": t0},
                            headers={"Authorization": f"Bearer {self.token}"})
        except httpx.HTTPError:
            pass

    def stop(self, *, grace_s: float = STOP_GRACE_S) -> int | None:
        """SIGTERM (the server stops its nodes), SIGKILL if it will not go."""
        return self._process.stop(grace_s=grace_s)
