"""A drill across Locust processes on loopback, for the cluster tests: the command line, a stand-in
target, and a master or worker started with the cluster secret, another one, or none."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.load.clusterauth import SECRET_ENV
from rushhour.scenarios.load.locust import proxy_free_env
from tests.support.waiting import wait_for_http

SECRET = "rightful-secret-0123456789"
SCENARIO = """\
name: {name}
traffic: {{model: "constant:10", duration: {duration}, seed: {seed}}}
target: {{url: "{url}"}}
slos:
  - {{name: availability, kind: availability, objective: 0.5}}
"""
"""A drill of `name` at 10 requests/s against `url`, judged only on availability."""


def rushhour(*args: str) -> list[str]:
    """The command line of `rushhour ARGS` in this interpreter."""
    return [sys.executable, "-m", "rushhour.scenarios.cli.main", *args]


@contextmanager
def generator_target() -> Iterator[str]:
    """The URL of a stand-in target on loopback that answers every request at once, stopped after."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.generator_target", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_for_http(url + "/", proc=proc), "the test target did not start"
        yield url
    finally:
        stop_process(proc, grace_s=5)


def cluster_env(secret: str | None) -> dict[str, str]:
    """An environment without proxies whose cluster secret is `secret` (none when None)."""
    env = {k: v for k, v in proxy_free_env().items() if k != SECRET_ENV}
    if secret:
        env[SECRET_ENV] = secret
    return env


def start(argv: list[str], log: Path, secret: str | None = SECRET) -> subprocess.Popen[bytes]:
    """`argv` started with the cluster secret `secret`, its output to `log`."""
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=cluster_env(secret), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
