"""A game day on a service that is not rushhour's, end to end: `rushhour init --pid-file`, a run
whose peak is calibrated on the service itself, a pause and a kill of its process in the middle
of the load, and a report with both fault windows and the recovery after each.

The service (tests/support/own_service.py: 2 workers of 25 ms, P95 under 150 ms up to about
69 req/s) runs under a tiny supervisor that starts it again when it is killed
(tests/support/supervisor.py) and writes its own PID file. The calibration's windows are cut to
10 s (a test, not a drill); the drill itself lasts 40 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml
from click.testing import CliRunner

from benchmarks.mdc import true_capacity
from rushhour.kernel.processes import free_port
from rushhour.scenarios.capacity import calibrate as calibrate_module
from rushhour.scenarios.cli.init import init
from rushhour.scenarios.cli.run import run
from rushhour.scenarios.run.embedded import EmbeddedServer
from rushhour.scenarios.run.overhead import SKIP_ENV
from tests.support.waiting import wait_for_http

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "tests" / "support"
WORKERS, SERVICE_MS, THRESHOLD_MS = 2, 25.0, 150.0
PAUSE_AT_S, PAUSE_HOLD_S, KILL_AT_S, DRILL_S = 6, 5, 24, 40


LAUNCH = ("import subprocess, sys; print(subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, "
          "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True).pid)")
"""Starts the supervisor and exits, so the service is nobody's child here, as in production."""


def _stop(pid: int) -> None:
    """SIGTERM the supervisor (it stops the service first), SIGKILL what is left after 10 s."""
    try:
        family = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    family[0].terminate()
    _, alive = psutil.wait_procs(family, timeout=10.0)
    for proc in alive:
        proc.kill()


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The service under its supervisor, detached from this process: its URL and its PID file."""
    port, pid_file = free_port(), tmp_path / "own-service.pid"
    service = [sys.executable, str(SUPPORT / "own_service.py"), str(port), str(WORKERS), f"{SERVICE_MS:g}", str(pid_file)]
    launched = subprocess.run([sys.executable, "-c", LAUNCH, sys.executable, str(SUPPORT / "supervisor.py"), *service],
                              capture_output=True, text=True, timeout=30, check=True)
    supervisor = int(launched.stdout)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_for_http(f"{url}/healthz", timeout_s=15.0)
        yield url, pid_file
    finally:
        _stop(supervisor)


def _clock(seconds: int) -> str:
    return f"00:00:{seconds:02d}"


def _drill_of(path: Path) -> None:
    """The scenario init wrote, made a 40 s game day as its comments invite: a calibrated flat
    load, one latency SLO, the pause and the kill moved into the 40 s."""
    data = yaml.safe_load(path.read_text())
    data["traffic"] = {"model": "constant:1", "peak_rps": "0.4x capacity", "duration": f"{DRILL_S}s", "seed": 7}
    data["slos"] = [{"name": "p95", "kind": "latency", "percentile": 95, "threshold_ms": THRESHOLD_MS}]
    data["load"] = {**data.get("load", {}), "max_lag_p99_ms": 250}
    pause, kill = data["chaos"]
    pause.update(at=_clock(PAUSE_AT_S), hold=f"{PAUSE_HOLD_S}s")
    kill.update(at=_clock(KILL_AT_S))
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.slow
@pytest.mark.timeout(480)
@pytest.mark.xdist_group("cpu-c")  # the lanes balanced by measured length (docs/benchmarks.md, The test suite)
def test_own_service_game_day_from_init_to_a_report_with_both_faults_and_their_recovery(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, supervised: tuple[str, Path]) -> None:
    url, pid_file = supervised
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(tmp_path / "leases"))
    monkeypatch.setenv(SKIP_ENV, "1")
    monkeypatch.setattr(calibrate_module, "CALIBRATION_STEPS_S", (10.0, 20.0))
    monkeypatch.setattr(EmbeddedServer, "start", lambda self: pytest.fail("the bundled server was booted"))
    scenario = tmp_path / "own-service.yaml"
    made = CliRunner().invoke(init, ["--target", url, "--pid-file", str(pid_file), "--out", str(scenario)])
    assert made.exit_code == 0, made.output
    _drill_of(scenario)
    first_pid = int(pid_file.read_text())

    out = tmp_path / "results"
    result = CliRunner().invoke(run, [str(scenario), "--out", str(out)])
    assert result.exit_code in (0, 1), result.output  # a verdict either way: the drill ran validly
    assert f"calibration: the capacity behind peak_rps 0.4x capacity on {url}" in result.output

    summary = json.loads((out / "summary.json").read_text())
    truth = true_capacity(THRESHOLD_MS, workers=WORKERS, service_ms=SERVICE_MS, percentile=95)
    assert 0.5 * truth <= summary["scenario"]["calibration"]["capacity_rps"] <= 1.15 * truth
    faults = {row["name"]: row for row in summary["faults"]}
    assert set(faults) == {"pause", "kill"}
    pause, kill = faults["pause"], faults["kill"]
    assert PAUSE_AT_S <= pause["start_s"] < pause["end_s"] - PAUSE_HOLD_S + 0.5 < KILL_AT_S <= kill["start_s"]
    assert pause["p99_during_ms"] is not None and pause["p99_during_ms"] > 1000  # nothing answered while it slept
    assert kill["failed_requests"] > 0  # the SIGKILL cut connections and refused new ones until the restart
    for row in (pause, kill):
        assert row["recovered"] and row["recovery_s"] is not None and row["recovery_s"] < 10, row
        assert row["steady_state"] is None or not row["steady_state"]["deviated"], row
    restarted = int(pid_file.read_text())
    assert restarted != first_pid and psutil.Process(restarted).status() != psutil.STATUS_STOPPED
    assert not list((tmp_path / "leases").glob("*.json"))  # the pause's lease went with it
    assert summary["leak_audit"]["clean"], summary["leak_audit"]  # nothing of the drill's outlived it
