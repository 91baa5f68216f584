"""Locust as a subprocess: command line, start handshake, CPU watch, clean stop.

Locust runs in its own process (and, with `--processes N`, its own forked workers) so that its
gevent loop never competes with the runner's scraping and bookkeeping, and so a stuck load
generator can always be stopped by signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from rushhour.kernel.atomic import open_streamed
from rushhour.kernel.pinning import ENV_PINNED, pins_env
from rushhour.kernel.processes import child_env, die_with_parent
from rushhour.scenarios.generator.settings import ENV_SETTINGS, LoadSettings
from rushhour.scenarios.generator.share_run import count_markers, publish_start

GENERATOR = Path(__file__).resolve().parents[1] / "generator"
OPEN_LOCUSTFILE = GENERATOR / "locustfile.py"
CLOSED_LOCUSTFILE = GENERATOR / "locustfile_closed.py"
READY_WAIT_S = 90.0
START_LEAD_S = 0.5
USERS_PER_REMOTE_WORKER = 8
"""Locust users per expected remote worker: every rightful worker gets one even while refused
nodes are still counted; only one user per worker fires its share (the share is claimed)."""


class LoadError(RuntimeError):
    """Locust could not be started or died before the load began."""


@dataclass(frozen=True)
class LocustCommand:
    """Everything needed to build one headless Locust command line."""

    host: str
    processes: int
    run_time_s: float
    locustfile: Path = OPEN_LOCUSTFILE
    users: int | None = None
    stop_timeout_s: float = 0.0
    """How long Locust lets a running task finish when stopped. 0 for the open loop: its task
    never finishes, and what is still in flight ends (cancelled) at the moment the load stops."""
    expect_workers: int = 0
    """A Locust master waiting for this many remote workers (`rushhour worker`); 0: one machine."""
    master_bind: tuple[str, int] = ("127.0.0.1", 5557)

    def argv(self) -> list[str]:
        if self.expect_workers:  # spare users and rebalancing: a refused node may have counted as a worker
            return self._argv(self.expect_workers * USERS_PER_REMOTE_WORKER) + [
                "--master", "--expect-workers", str(self.expect_workers), "--enable-rebalancing",
                "--master-bind-host", self.master_bind[0], "--master-bind-port", str(self.master_bind[1]),
                "--loglevel", "INFO"]  # workers joining, quitting and given users: what a cross-host run is debugged by
        argv = self._argv(self.users if self.users is not None else self.processes)
        if self.processes > 1:
            argv += ["--processes", str(self.processes)]
        return argv

    def _argv(self, users: int) -> list[str]:
        return [
            sys.executable, "-m", "locust", "-f", str(self.locustfile), "--headless",
            "-u", str(users), "-r", str(max(users, 1)), "--host", self.host,
            "--run-time", f"{int(self.run_time_s) + 1}s", "--stop-timeout", f"{self.stop_timeout_s:g}",
            "--only-summary", "--loglevel", "WARNING",
        ]


class LocustProcess:
    """One Locust subprocess (own process group) with its log file."""

    def __init__(self, command: LocustCommand, *, env: dict[str, str], log_path: Path) -> None:
        self._command = command
        self._env = env
        self._log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._watched: dict[int, psutil.Process] = {}

    def start(self) -> None:
        log = open_streamed(self._log_path, append=True)
        try:
            self._proc = subprocess.Popen(
                self._command.argv(), env=self._env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, cwd=self._log_path.parent,
                preexec_fn=die_with_parent,  # SIGTERM when the drill's main thread dies, even by SIGKILL
            )
        finally:
            log.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def cpu_percent(self) -> float:
        """Highest CPU use (% of one core) of any Locust process since the last call."""
        if not self.alive() or self._proc is None:
            return 0.0
        try:
            root = psutil.Process(self._proc.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0.0
        return max((self._sample(p) for p in procs), default=0.0)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the Locust processes alive now have used so far."""
        if self._proc is None:
            return 0.0
        try:
            root = psutil.Process(self._proc.pid)
            times = [p.cpu_times() for p in (root, *root.children(recursive=True))]
        except psutil.Error:
            return 0.0
        return float(sum(t.user + t.system for t in times))

    def _sample(self, proc: psutil.Process) -> float:
        known = self._watched.setdefault(proc.pid, proc)
        try:
            return float(known.cpu_percent(interval=None))
        except psutil.Error:
            return 0.0

    def stop(self, *, grace_s: float = 10.0) -> int | None:
        """SIGTERM Locust, SIGKILL whatever of it lingers (by PID); returns the exit code."""
        proc = self._proc
        if proc is None:
            return None
        family = _family(proc.pid)
        if proc.poll() is None:
            _send(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _send(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        for child in family:
            _kill_if_running(child)  # forked workers the master left behind, if any
        return proc.returncode


def _family(pid: int) -> list[psutil.Process]:
    """Every descendant of `pid` (Locust's forked workers)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _kill_if_running(proc: psutil.Process) -> None:
    """SIGKILL a process we started, unless it is gone (is_running also guards PID reuse)."""
    try:
        if proc.is_running():
            proc.kill()
    except psutil.Error:
        pass


def _send(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy"})


def worker_env(settings: LoadSettings) -> dict[str, str]:
    """The environment Locust runs in: ours without proxy variables (the load goes straight to the
    target the loopback guard allowed, never through a proxy), plus the load settings and the
    addresses the guard pinned each host name to (`rushhour.kernel.pinning`)."""
    env = proxy_free_env()
    env[ENV_SETTINGS] = settings.to_env()
    env[ENV_PINNED] = pins_env()
    return env


def proxy_free_env() -> dict[str, str]:
    """Our environment without proxy variables and without rushhour's secrets (the caller hands the
    cluster secret back to a Locust that needs it), unbuffered: what every Locust process runs in."""
    env = {key: value for key, value in child_env().items() if key.lower() not in PROXY_VARIABLES}
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def wait_ready(proc: LocustProcess, control: Path, workers: int, *, limit_s: float = READY_WAIT_S) -> None:
    """Wait until every worker has loaded its share; raise LoadError if Locust dies first."""
    give_up = time.monotonic() + limit_s
    while count_markers(control, "ready") < workers:
        refused = sorted(control.glob("failed-*"))
        if refused:  # a remote worker turned away before the start (e.g. another version)
            raise LoadError(refused[0].read_text(encoding="utf-8"))
        if not proc.alive():
            raise LoadError("Locust exited before its workers were ready; see locust.log.")
        if time.monotonic() > give_up:
            raise LoadError(f"Locust workers were not ready within {limit_s:.0f} s; see locust.log.")
        time.sleep(0.05)


def start_load(control: Path, *, lead_s: float = START_LEAD_S) -> float:
    """Publish the common start time (a little ahead, so every worker sees it in time)."""
    t0 = time.time() + lead_s
    publish_start(control, t0)
    return t0
