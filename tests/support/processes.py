"""Processes a test started: whether one still runs, and ending one with everything it started.

Tests stop only what they started, by PID (never by name), and a zombie counts as ended: it
runs nothing and only waits for its parent to collect its exit status.
"""

from __future__ import annotations

import subprocess

import psutil

__all__ = ["kill_tree", "pid_alive", "pids_alive"]


def pid_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def pids_alive(pids: list[int]) -> list[int]:
    """The PIDs of `pids` that still run."""
    return [pid for pid in pids if pid_alive(pid)]


def kill_tree(proc: subprocess.Popen[bytes] | subprocess.Popen[str], *, wait_s: float = 30.0) -> None:
    """SIGKILL `proc` and every process it started that still runs, then collect its exit status.

    For a test's `finally`: a subprocess the test did not end on its own path (a failed assertion
    before its kill or its signal) must not outlive the test, nor must its children (a drill's
    Locust, a capacity search's chaos run), which SIGKILL of the parent alone would leave behind.
    """
    if proc.poll() is None:
        try:
            family = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        proc.kill()
        for child in family:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
    proc.wait(timeout=wait_s)
