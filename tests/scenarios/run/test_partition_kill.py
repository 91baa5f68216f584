"""SIGKILL of `rushhour run` in the middle of a partition held for ten minutes: the partition
outlives its first 20 s lease while the drill renews it; once the drill is killed nothing renews
it, and the gateway heals the node within the lease, not after the hold.

The chaos run is killed with the drill (first, so it cannot play its rollbacks on the way out):
only the lease is left to end the fault, as after a machine loss."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support.processes import kill_tree
from tests.support.server import REPO, TOKEN, RunningServer
from tests.support.traffic import short_texts

pytestmark = pytest.mark.slow
HEAL_WITHIN_S = 30.0
LEASE_S = 20.0  # the default lease (RUSHHOUR_LEASE_S unset)
SCENARIO = """\
name: partition-kill
traffic: {{model: "{model}", duration: 15m, seed: 1}}
target: {{url: "{url}"}}
chaos:
  - {{at: "00:00:02", experiment: "{experiments}/network-partition.json", hold: 10m}}
"""


def _partitioned(server: RunningServer) -> list[str]:
    return [str(n["id"]) for n in server.status()["nodes"] if any(f.get("kind") == "partition" for f in n["faults"])]


def _chaos_runs(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True) if "chaos" in " ".join(p.cmdline())]


def test_sigkill_of_run_mid_partition_heals_within_the_lease(uncached_server: RunningServer, tmp_path: Path) -> None:
    server = uncached_server
    scenario = SCENARIO.format(url=server.url, experiments=REPO / "experiments", model=short_texts(tmp_path, 2))
    (tmp_path / "scenario.yaml").write_text(scenario, encoding="utf-8")
    env = {**os.environ, "RUSHHOUR_ADMIN_TOKEN": TOKEN}
    env.pop("RUSHHOUR_LEASE_S", None)
    with (tmp_path / "run.log").open("wb") as log:
        drill = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.cli.main", "run", str(tmp_path / "scenario.yaml"),
                                  "--no-probe", "--out", str(tmp_path / "out")], env=env, cwd=REPO, stdout=log,
                                 stderr=subprocess.STDOUT)
    try:
        server.wait_for(lambda status: bool(_partitioned(server)), timeout_s=180)
        time.sleep(LEASE_S + 5.0)  # past its first lease: only the renewals keep it on
        assert _partitioned(server), "the partition ended while the drill held it (not renewed)"
        chaos_runs = _chaos_runs(drill.pid)
        assert chaos_runs, "the drill runs no chaos process to kill"
        for chaos in chaos_runs:
            chaos.send_signal(signal.SIGKILL)
        drill.send_signal(signal.SIGKILL)
        drill.wait(timeout=30)
        killed_at = time.monotonic()
        while _partitioned(server) and time.monotonic() - killed_at < HEAL_WITHIN_S:
            time.sleep(0.25)
        assert not _partitioned(server), (
            f"still partitioned {HEAL_WITHIN_S:g} s after the drill was killed; log:\n" + (tmp_path / "run.log").read_text())
    finally:
        kill_tree(drill)
