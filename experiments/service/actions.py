"""Chaos Toolkit actions on a user's own service process: pause it, resume it, kill it.

The process is the one whose PID is in the file named by `pid_file`, else by the `PID_FILE`
environment variable (a scenario's chaos entry sets it: `env: {PID_FILE: /run/myservice.pid}`).
A pause is a SIGSTOP: the process holds its sockets and memory but answers nothing, the way a
long GC pause, a hung disk or a frozen VM looks from outside. A kill is a SIGKILL: whatever
supervises the service (systemd, a container runtime, a process manager) is expected to start it
again, and the drill's report measures the recovery the users see.

A pause ends by itself: it is held under a short lease (see `rushhour.experiments.leases`) that
the `chaos run` renews while it holds the fault, and a lease keeper, started in a session of its
own before the SIGSTOP, sends SIGCONT once the lease lapses unrenewed, so a SIGKILLed harness
leaves the service paused for at most one lease.
"""

from __future__ import annotations

import time
from typing import Any

import psutil
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from rushhour.experiments.leases import (
    hold_lease,
    lease_file,
    lease_s,
    new_lease_file,
    release,
    spawn_keeper,
    write_lease,
)
from rushhour.experiments.service.process import find_process, read_pid_file

__all__ = ["kill_process", "pause_process", "pid_not_paused", "resume_pid", "resume_process"]

KILL_WAIT_S = 10.0


def _lease_name(pid: int) -> str:
    return f"service-pause-{pid}"


def pause_process(pid_file: str = "", hold_s: float = 0.0, ttl_s: float = 60.0,
                  configuration: Configuration = None, secrets: Secrets = None) -> dict[str, Any]:
    """Pause the service: SIGSTOP the process whose PID is in `pid_file` (default: $PID_FILE).

    pid_file: the service's PID file; empty means the PID_FILE environment variable.
    hold_s: how long the experiment holds the pause; a short lease is renewed meanwhile.
    ttl_s: the lease when nothing is held.

    Undo with `resume_process` (SIGCONT). The process cannot time a pause out by itself, so a
    detached lease keeper, started before the SIGSTOP in a session of its own, sends SIGCONT when
    the lease lapses unrenewed (a killed harness); it exits once it has seen the pause undone.
    """
    proc = find_process(pid_file)
    lease = lease_s(ttl_s, hold_s)
    path = new_lease_file(_lease_name(proc.pid), lease)
    keeper = spawn_keeper("resume_process", lease,
                          {"pid": proc.pid, "create_time": proc.create_time(), "lease_file": str(path)})
    hold_lease(f"service-pause|{proc.pid}", lambda seconds: write_lease(path, seconds), lease, float(hold_s))
    proc.suspend()
    return {"pid": proc.pid, "paused": True, "lease_s": lease, "lease_keeper_pid": keeper}


def resume_process(pid_file: str = "", configuration: Configuration = None, secrets: Secrets = None) -> dict[str, Any]:
    """Resume the service after `pause_process`: SIGCONT the process in `pid_file` (default:
    $PID_FILE), stop renewing its lease and let its keeper go. Nothing happens to a process that
    is not paused, or that is gone."""
    _, pid = read_pid_file(pid_file)
    release(f"service-pause|{pid}")
    lease_file(_lease_name(pid)).unlink(missing_ok=True)  # undone: its keeper may go
    try:
        proc = psutil.Process(pid)
        paused = proc.status() == psutil.STATUS_STOPPED
        if paused:
            proc.resume()
    except psutil.NoSuchProcess:
        return {"pid": pid, "resumed": False, "gone": True}
    return {"pid": pid, "resumed": paused}


def resume_pid(pid: int, create_time: float) -> bool:
    """The lease keeper's undo: SIGCONT `pid` if it is still the process that was paused (same
    start time, so a reused PID is never signalled); False when there was nothing to resume."""
    try:
        proc = psutil.Process(int(pid))
        if abs(proc.create_time() - float(create_time)) > 0.01:
            return False
        proc.resume()
    except psutil.NoSuchProcess:
        return False
    return True


def pid_not_paused(pid: int) -> bool:
    """The lease keeper's probe: True unless `pid` is a live, stopped process."""
    try:
        return psutil.Process(int(pid)).status() != psutil.STATUS_STOPPED
    except psutil.NoSuchProcess:
        return True


def kill_process(pid_file: str = "", configuration: Configuration = None, secrets: Secrets = None) -> dict[str, Any]:
    """Kill the service: SIGKILL the process whose PID is in `pid_file` (default: $PID_FILE) and
    wait until it is dead.

    Nothing here undoes it: the service's own supervisor (systemd `Restart=`, a container
    runtime, a process manager) starts it again, and the drill measures how long its users wait.
    """
    proc = find_process(pid_file)
    proc.kill()
    give_up = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < give_up:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)
    else:
        raise ActivityFailed(f"pid {proc.pid} was sent SIGKILL and still runs after {KILL_WAIT_S:g} s.")
    return {"pid": proc.pid, "killed": True}
