"""Start a throw-away Prometheus server on a free loopback port for a test, and stop it by PID.

The binary comes from Debian's `prometheus` package (`make test` installs it when missing and
root); without it the tests that need it skip and say why.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from rushhour.kernel.processes import die_with_parent, free_port, stop_process

SKIP_REASON = "needs a Prometheus server and promtool (apt-get install prometheus)"


def binaries() -> tuple[str, str]:
    """(prometheus, promtool), or skip the test saying what is missing."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        pytest.skip(SKIP_REASON)
    return prometheus, promtool


@dataclass
class PrometheusServer:
    """One Prometheus scraping every second what `scrape_configs` name; its data in `workdir`."""

    workdir: Path
    scrape_configs: list[dict[str, Any]]
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> None:
        binary = binaries()[0]
        self.port = self.port or free_port()
        config = self.workdir / "prometheus.yml"
        config.write_text(yaml.safe_dump({"global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                                                     "evaluation_interval": "1s"},
                                          "scrape_configs": self.scrape_configs}))
        command = [binary, f"--config.file={config}", f"--storage.tsdb.path={self.workdir / 'data'}",
                   f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"]
        with (self.workdir / "prometheus.log").open("ab") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"Prometheus on port {self.port} was not ready within {timeout_s} s; "
                           f"see {self.workdir / 'prometheus.log'}.")

    def stop(self) -> None:
        stop_process(self.proc, grace_s=10)
        self.proc = None

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict[str, Any]]:
        """The matrix PromQL `expr` gives over [start, end] (Unix seconds); fails on a bad query."""
        reply = httpx.get(f"{self.url}/api/v1/query_range", timeout=30.0,
                          params={"query": expr, "start": start, "end": end, "step": step}).json()
        assert reply["status"] == "success", f"{expr}: {reply}"
        return list(reply["data"]["result"])


def check_metrics(text: str) -> str:
    """`promtool check metrics` on an exposition; its complaints ("" when clean)."""
    done = subprocess.run([binaries()[1], "check", "metrics"], input=text.encode(), capture_output=True, timeout=60, check=False)
    return (done.stdout + done.stderr).decode().strip()
