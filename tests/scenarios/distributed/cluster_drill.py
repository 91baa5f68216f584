"""A drill across Locust processes on loopback, for the cluster tests: the command line, a stand-in
target, a master or worker started with the cluster secret, another one, or none, and the wait
for a worker to receive the drill's start."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.generator.clusterauth import SECRET_ENV
from rushhour.scenarios.load.locust import proxy_free_env
from tests.support.waiting import wait_for_http

SECRET = "rightful-secret-0123456789"
START_WAIT_S = 120.0
"""How long a worker may take to receive the drill's start time on a loaded machine."""
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


def wait_for_start(work: Path, proc: subprocess.Popen[bytes], wait_s: float = START_WAIT_S) -> None:
    """Return once the worker working in `work` has the drill's start time; fail the test if it
    exits or `wait_s` passes first."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and proc.poll() is None:
        if any(work.glob("run-*/control/start")):
            return
        time.sleep(0.1)
    pytest.fail("the worker never received the drill's start time")
