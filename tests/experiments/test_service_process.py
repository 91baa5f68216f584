"""Faults on a user's own process (experiments/service-pause.json, service-kill.json), run by
`chaos run` as a drill runs them: a pause resumed by its rollback, a pause resumed by its lease
keeper after the harness was SIGKILLed, and a kill its supervisor recovers from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.service.actions import resume_pid
from rushhour.experiments.service.process import find_process
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.run.chaos.process import ChaosProcess
from tests.support.waiting import wait_for_http

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 2.0
OWN_SERVICE = ROOT / "tests" / "support" / "own_service.py"


def _until(check: Callable[[], bool], timeout_s: float) -> float | None:
    """Seconds until `check` held, polled every 20 ms; None when it never did within `timeout_s`."""
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if check():
            return time.monotonic() - began
        time.sleep(0.02)
    return None


def _status(pid: int) -> str:
    try:
        return str(psutil.Process(pid).status())
    except psutil.NoSuchProcess:
        return "gone"


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, str]]:
    """A service that is not rushhour's, its PID file and its URL."""
    port, pid_file = free_port(), tmp_path / "victim.pid"
    proc = subprocess.Popen([sys.executable, str(OWN_SERVICE), str(port), "2", "5", str(pid_file)],
                            stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_for_http(f"{url}/healthz", timeout_s=15.0, proc=proc)
        yield proc, pid_file, url
    finally:
        if _status(proc.pid) == psutil.STATUS_STOPPED:
            psutil.Process(proc.pid).resume()
        stop_process(proc, grace_s=1.0)


def _chaos(tmp_path: Path, name: str, env: dict[str, str]) -> ChaosProcess:
    leases = tmp_path / "leases"
    base = {"RUSHHOUR_LEASE_S": f"{LEASE_S:g}", "RUSHHOUR_LEASE_MARGIN_S": "0", "RUSHHOUR_LEASE_DIR": str(leases)}
    proc = ChaosProcess(name=name, experiment=ROOT / "experiments" / f"{name}.json", out_dir=tmp_path / "chaos",
                        env={**base, **env}, hypothesis="after-method-only")
    proc.launch()
    return proc


def _journal_output(proc: ChaosProcess, activity: str) -> object:
    journal = proc.journal() or {}
    return next(run["output"] for run in journal["run"] if run["activity"]["name"] == activity)


@pytest.mark.slow
def test_service_pause_stops_the_process_for_the_hold_and_resumes_it(
        tmp_path: Path, victim: tuple[subprocess.Popen[bytes], Path, str]) -> None:
    proc, pid_file, url = victim
    chaos = _chaos(tmp_path, "service-pause", {"PID_FILE": str(pid_file), "RUSHHOUR_FAULT_HOLD_S": "1.5",
                                               "RUSHHOUR_URL": url})
    try:
        assert _until(lambda: _status(proc.pid) == psutil.STATUS_STOPPED, 30.0) is not None
        assert chaos.wait(timeout_s=60.0) == 0, chaos.log_path.read_text()
    finally:
        chaos.kill()
    assert chaos.status() == "completed"
    assert _status(proc.pid) not in (psutil.STATUS_STOPPED, "gone")
    paused = _journal_output(chaos, "pause-service")
    assert isinstance(paused, dict) and paused["pid"] == proc.pid
    keeper = int(paused["lease_keeper_pid"])
    assert _until(lambda: not psutil.pid_exists(keeper) or _status(keeper) == psutil.STATUS_ZOMBIE, 10.0) is not None
    assert not list((tmp_path / "leases").glob("*.json"))  # the lease went with the fault


@pytest.mark.slow
def test_service_pause_outlives_a_sigkilled_harness_by_at_most_its_lease(
        tmp_path: Path, victim: tuple[subprocess.Popen[bytes], Path, str]) -> None:
    """The chaos run holds the pause for ten minutes and is SIGKILLed with its whole session; the
    keeper, in a session of its own, resumes the service within one lease of the last renewal."""
    proc, pid_file, url = victim
    chaos = _chaos(tmp_path, "service-pause", {"PID_FILE": str(pid_file), "RUSHHOUR_FAULT_HOLD_S": "600",
                                               "RUSHHOUR_URL": url})
    try:
        assert _until(lambda: _status(proc.pid) == psutil.STATUS_STOPPED, 30.0) is not None, chaos.log_path.read_text()
        time.sleep(LEASE_S * 1.5)  # renewals hold it past one lease while the harness lives
        assert _status(proc.pid) == psutil.STATUS_STOPPED
        keepers = [p for p in psutil.process_iter(["cmdline"])
                   if "rushhour.experiments.leasekeeper" in " ".join(p.info["cmdline"] or [])
                   and str(proc.pid) in " ".join(p.info["cmdline"] or [])]
        assert keepers and all(os.getsid(k.pid) != os.getsid(chaos.pid or 0) for k in keepers)
    finally:
        chaos.kill()  # SIGKILL to the harness's whole session: no rollback runs
    resumed_after = _until(lambda: _status(proc.pid) != psutil.STATUS_STOPPED, LEASE_S + 5.0)
    assert resumed_after is not None and resumed_after <= LEASE_S + 1.5, resumed_after
    assert wait_for_http(f"{url}/healthz", timeout_s=5.0)  # and it serves again


@pytest.mark.slow
def test_service_kill_kills_the_process_and_waits_for_its_supervisor(tmp_path: Path) -> None:
    port, pid_file = free_port(), tmp_path / "own.pid"
    service = [sys.executable, str(ROOT / "tests" / "support" / "own_service.py"), str(port), "2", "5", str(pid_file)]
    supervisor = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "supervisor.py"), *service],
                                  stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_for_http(f"{url}/healthz", timeout_s=15.0, proc=supervisor)
        first = int(pid_file.read_text())
        chaos = _chaos(tmp_path, "service-kill", {"PID_FILE": str(pid_file), "RUSHHOUR_URL": url})
        assert chaos.wait(timeout_s=60.0) == 0, chaos.log_path.read_text()
        assert chaos.status() == "completed"
        assert int(pid_file.read_text()) != first and not psutil.pid_exists(first) or _status(first) == "zombie"
        waited = _journal_output(chaos, "seconds-until-the-service-answers")
        assert isinstance(waited, float) and 0 <= waited < 10
    finally:
        stop_process(supervisor, grace_s=5.0)


def test_service_process_refuses_what_it_must_never_signal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PID_FILE", raising=False)
    with pytest.raises(ActivityFailed, match="set PID_FILE in the chaos entry's env"):
        find_process("")
    pid_file = tmp_path / "x.pid"
    for text, reason in [("1", "never signals init"), (str(os.getpid()), "the harness itself"), ("abc", "not a decimal"),
                         ("999999999", "no such process runs")]:
        pid_file.write_text(text)
        with pytest.raises(ActivityFailed, match=reason):
            find_process(str(pid_file))
    with pytest.raises(ActivityFailed, match="cannot be read"):
        find_process(str(tmp_path / "missing.pid"))


@pytest.mark.slow
def test_service_keeper_never_resumes_a_reused_pid(victim: tuple[subprocess.Popen[bytes], Path, str]) -> None:
    proc, _, _ = victim
    psutil.Process(proc.pid).suspend()
    assert _until(lambda: _status(proc.pid) == psutil.STATUS_STOPPED, 5.0) is not None
    assert resume_pid(proc.pid, psutil.Process(proc.pid).create_time() - 100.0) is False
    time.sleep(0.3)
    assert _status(proc.pid) == psutil.STATUS_STOPPED
    assert resume_pid(proc.pid, psutil.Process(proc.pid).create_time()) is True
    assert _until(lambda: _status(proc.pid) != psutil.STATUS_STOPPED, 5.0) is not None


def test_service_experiments_name_their_process_by_the_pid_file_env() -> None:
    for name in ("service-pause", "service-kill"):
        experiment = json.loads((ROOT / "experiments" / f"{name}.json").read_text())
        assert experiment["configuration"]["pid_file"] == {"type": "env", "key": "PID_FILE", "default": ""}
