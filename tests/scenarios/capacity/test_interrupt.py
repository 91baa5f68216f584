"""`rushhour capacity` stopped during N-1: SIGTERM restores the held-down node, writes what was
measured and exits 3; SIGKILL leaves the node's lease unrenewed, and the gateway brings it back
within the lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scenarios.capacity.test_n_minus_one import _scenario
from tests.support.processes import kill_tree
from tests.support.server import REPO, TOKEN, RunningServer

pytestmark = pytest.mark.slow
LEASE_S = "3"


@pytest.fixture
def server(uncached_server: RunningServer) -> Iterator[RunningServer]:
    """One server for both tests (a boot each would double their time): each leaves it with every
    node ready again."""
    yield uncached_server
    uncached_server.wait_for(lambda s: all(n["state"] == "ready" for n in s["nodes"]), timeout_s=60)


def _state(server: RunningServer, node: str) -> str:
    return str({n["id"]: n["state"] for n in server.status()["nodes"]}[node])


def _capacity(server: RunningServer, tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "RUSHHOUR_ADMIN_TOKEN": TOKEN, "RUSHHOUR_LEASE_S": LEASE_S}
    return subprocess.Popen(
        [sys.executable, "-m", "rushhour.scenarios.cli.main", "capacity", str(_scenario(tmp_path, server.url)), "--faults", "n-1",
         "--min-rps", "2", "--max-rps", "8", "--step-duration", "60s", "--out", str(tmp_path / "out")],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_held(server: RunningServer, proc: subprocess.Popen[str]) -> None:
    """Until quality-0 has been down for longer than one lease (so the renewals are what hold it)."""
    give_up = time.monotonic() + 120
    while _state(server, "quality-0") != "down":
        assert proc.poll() is None and time.monotonic() < give_up, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.2)
    time.sleep(2 * float(LEASE_S))
    assert _state(server, "quality-0") == "down", "N-1 did not hold the node past one lease"


def test_sigterm_of_capacity_during_n_minus_one_brings_the_node_back_and_exits_3(
    server: RunningServer, tmp_path: Path,
) -> None:
    proc = _capacity(server, tmp_path)
    try:
        _wait_held(server, proc)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=180)
    finally:
        kill_tree(proc)
    assert proc.returncode == 3, output
    assert "SIGTERM: stopping the search" in output
    document = json.loads((tmp_path / "out" / "capacity.json").read_text())
    assert document["aborted"] == "interrupted by SIGTERM"
    assert [c["condition"] for c in document["conditions"]] == ["n-1"]
    server.wait_for(lambda s: {n["id"]: n["state"] for n in s["nodes"]}["quality-0"] == "ready", timeout_s=60)


def test_sigkill_of_capacity_during_n_minus_one_leaves_the_node_down_no_longer_than_its_lease(
    server: RunningServer, tmp_path: Path,
) -> None:
    proc = _capacity(server, tmp_path)
    try:
        _wait_held(server, proc)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        kill_tree(proc)
    killed_at = time.monotonic()
    while _state(server, "quality-0") == "down" and time.monotonic() - killed_at < 30:
        time.sleep(0.2)
    assert _state(server, "quality-0") != "down", "the node was still down 30 s after its holder died"
