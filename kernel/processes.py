"""Child processes rushhour starts: a free loopback port, dying with the parent, stopping by PID,
and the environment each is given.

Every process rushhour starts (reference server, nodes, Locust, chaos runs, test servers) is
stopped through `stop_process`, and the long-lived ones are started with `die_with_parent`, so
a harness killed with SIGKILL does not leave load or servers behind. A child's environment comes
from `child_env`: rushhour's own secrets (the cluster secret, the admin token) are taken out, and
only the child that uses one is handed it back by name.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
from collections.abc import Iterable, Mapping

__all__ = ["SECRET_VARIABLES", "child_env", "die_with_parent", "free_port", "stop_process"]

SECRET_VARIABLES = ("RUSHHOUR_CLUSTER_SECRET", "RUSHHOUR_ADMIN_TOKEN")
"""Variables that hold a rushhour secret: no child inherits them unless it is named as their user."""

_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def child_env(base: Mapping[str, str] | None = None, *, keep: Iterable[str] = (),
              extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: `base` (default this process's) without the secrets of
    `SECRET_VARIABLES` except those in `keep`, then `extra` (which may hand one in explicitly)."""
    kept = set(keep)
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in SECRET_VARIABLES or k in kept}
    env.update(extra or {})
    return env


def die_with_parent(sig: signal.Signals = signal.SIGTERM) -> None:
    """`preexec_fn` for Popen: the kernel sends `sig` to the child when its parent dies.

    Linux only; elsewhere it does nothing and the child's own watchdog (if it has one) applies.
    """
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig))
    except (OSError, AttributeError):
        pass


def stop_process(proc: subprocess.Popen[bytes] | None, *, grace_s: float = 10.0,
                 sig: signal.Signals = signal.SIGTERM, group: bool = False) -> int | None:
    """Send `sig` (to the process group when `group`), wait `grace_s`, then SIGKILL; always reap.

    Returns the exit code, or None when there was no process.
    """
    if proc is None:
        return None
    if proc.poll() is None and grace_s > 0:
        _signal(proc, sig, group)
        try:
            return proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        _signal(proc, signal.SIGKILL, group)
    return proc.wait()


def _signal(proc: subprocess.Popen[bytes], sig: signal.Signals, group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass
