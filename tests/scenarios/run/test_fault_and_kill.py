"""Fault and kill: `rushhour run` SIGKILLed in the middle of an active partition.

Within 30 s of the kill: no process of the run is left (server, nodes, Locust, chaos), a fault
on a target that outlives the harness is healed by its lease, and `rushhour report DIR` rebuilds
a report from what the run had written. Each test runs one short drill (about a minute).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest
import yaml

from rushhour.kernel.contract import EVENTS_FILE
from rushhour.scenarios.run.rebuild import events_so_far
from tests.support.server import REPO, TOKEN, RunningServer
from tests.support.traffic import short_texts

CHECK_WITHIN_S = 30.0
SLO_ENV = {"RUSHHOUR_SLO_WINDOW_S": "1", "RUSHHOUR_SLO_P99_MS": "60000", "RUSHHOUR_SLO_MAX_ERROR_RATE": "1"}


def _scenario(tmp_path: Path, target: dict[str, Any], chaos: dict[str, Any]) -> Path:
    spec = {
        "name": "fault-and-kill",
        "traffic": {"model": str(short_texts(tmp_path, 3)), "duration": "90s", "seed": 5},  # no documents: see the helper
        "target": target,
        "load": {"processes": 1},
        "slos": [{"name": "availability", "kind": "availability", "objective": 0.5}],
        "chaos": [chaos],
    }
    path = tmp_path / "fault-and-kill.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _wait(what: str, predicate: Callable[[], Any], *, timeout_s: float, proc: subprocess.Popen[bytes] | None = None) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"rushhour run exited with {proc.returncode} before {what}")
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout_s:.0f} s")


def _alive(procs: list[psutil.Process]) -> list[str]:
    left = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            continue
    return left


def _start_drill(scenario: Path, out: Path, drill_process: list, **env: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.cli.main", "run", str(scenario), "--out", str(out)],
                            cwd=REPO, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    drill_process.append(proc)
    return proc


def _fault_start(out: Path, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    return _wait("the partition", lambda: next((e for e in events_so_far(out / EVENTS_FILE) if e.get("type") == "fault_start"), None),
                 timeout_s=180, proc=proc)


def _recorded(out: Path) -> int:
    """Requests the load workers had written to part files (what a rebuild must bring back)."""
    parts = [pd.read_parquet(p) for p in sorted((out / "load" / "parts").glob("part-*.parquet"))]
    return int(pd.concat(parts)["row"].nunique()) if parts else 0


def _wait_for_parts(out: Path, proc: subprocess.Popen[bytes]) -> None:
    _wait("a part file", lambda: list((out / "load" / "parts").glob("part-*.parquet")), timeout_s=60, proc=proc)


def _report_rebuilds(out: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "rushhour.scenarios.cli.main", "report", str(out)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stdout + result.stderr  # rebuilt, and invalid: the run was killed
    assert "rebuilt the results of an interrupted run" in result.stderr
    requests = pd.read_parquet(out / "requests.parquet")
    assert len(requests) == len(pd.read_parquet(out / "schedule.parquet"))
    assert requests["done_s"].notna().sum() >= _recorded(out)  # every request a part file held is there
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "invalid" and (out / "report.html").is_file()
    audit = json.loads((out / "leak_audit.json").read_text())
    assert "processes" in audit["checked"] and audit["clean"] is True, audit  # every recorded process is gone


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-b")
def test_sigkill_mid_partition_leaves_no_process_of_the_run(tmp_path: Path, drill_process: list) -> None:
    chaos = {"at": "00:00:03", "experiment": str(REPO / "experiments" / "network-partition.json"), "hold": "120s",
             "env": SLO_ENV}
    scenario = _scenario(tmp_path, {"embedded": {"nodes": 2, "max_batch_size": 4}}, chaos)
    out = tmp_path / "results"
    proc = _start_drill(scenario, out, drill_process)
    _fault_start(out, proc)
    time.sleep(3.0)  # the partition is in place and the load is running
    _wait_for_parts(out, proc)
    family = psutil.Process(proc.pid).children(recursive=True)
    commands = " ".join(" ".join(p.cmdline()) for p in family)
    for role in ("reference_server --host", "rushhour.reference_server.node", "locust", "rushhour.scenarios.run.chaos.main"):
        assert role in commands, f"{role} is not running: {commands}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    killed = time.monotonic()
    _wait("every process of the run to end", lambda: not _alive(family), timeout_s=CHECK_WITHIN_S)
    assert time.monotonic() - killed < CHECK_WITHIN_S, _alive(family)
    assert not (out / "requests.parquet").exists()  # the harness never got to write it
    _report_rebuilds(out)


def _partition_experiment(tmp_path: Path) -> Path:
    """The shipped partition experiment with a TTL of 1 s: held, the fault gets the short renewed lease instead."""
    experiment = json.loads((REPO / "experiments" / "network-partition.json").read_text())
    experiment["method"][0]["provider"]["arguments"]["ttl_s"] = 1
    path = tmp_path / "partition-with-lease.json"
    path.write_text(json.dumps(experiment))
    return path


def _partitioned(server: RunningServer) -> list[str]:
    return [n["id"] for n in server.status()["nodes"] if any(f.get("kind") == "partition" for f in n["faults"])]


@pytest.mark.slow
def test_sigkill_of_harness_and_chaos_run_fault_healed_by_its_lease(tmp_path: Path, drill_process: list,
                                                                   server_factory: Callable[..., RunningServer]) -> None:
    server = server_factory()
    hold_s, lease_s = 12, 6  # renewed every 1.5 s while held; after the kill, gone within 6 s
    chaos = {"at": "00:00:03", "experiment": str(_partition_experiment(tmp_path)), "hold": f"{hold_s}s",
             "env": {**SLO_ENV, "RUSHHOUR_LEASE_S": str(lease_s)}}
    scenario = _scenario(tmp_path, {"url": server.url}, chaos)
    out = tmp_path / "results"
    proc = _start_drill(scenario, out, drill_process, RUSHHOUR_ADMIN_TOKEN=TOKEN)
    chaos_run = psutil.Process(int(_fault_start(out, proc)["pid"]))
    _wait("the partition on the server", lambda: _partitioned(server), timeout_s=30, proc=proc)
    injected = time.monotonic()
    time.sleep(2.0)
    _wait_for_parts(out, proc)
    family = psutil.Process(proc.pid).children(recursive=True)
    assert any("locust" in " ".join(p.cmdline()) for p in family)
    os.killpg(chaos_run.pid, signal.SIGKILL)  # no rollback will ever come: only the lease can heal
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    killed = time.monotonic()
    assert _partitioned(server), "the fault must still be there right after the kill"
    _wait("every process of the run to end", lambda: not _alive(family), timeout_s=CHECK_WITHIN_S)
    _wait("the lease to heal the partition", lambda: not _partitioned(server), timeout_s=CHECK_WITHIN_S)
    healed = time.monotonic()
    assert healed - killed < CHECK_WITHIN_S
    assert healed - injected >= lease_s  # healed by the lease, not early
    assert all(n["state"] == "ready" for n in server.status()["nodes"])
    _report_rebuilds(out)
