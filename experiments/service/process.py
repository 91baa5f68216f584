"""The process of a user's service, named by its PID file (the chaos entry's `env: {PID_FILE: ...}`).

The file holds one decimal PID, as daemons and supervisors write it. The process is checked
before any signal is sent: it must exist, be neither init nor this harness nor one of its
ancestors, and run as this user (or this user is root), so a stale or mistyped PID file never
signals the wrong thing.
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
from chaoslib.exceptions import ActivityFailed

__all__ = ["PID_FILE_ENV", "find_process", "read_pid_file"]

PID_FILE_ENV = "PID_FILE"


def read_pid_file(pid_file: str = "") -> tuple[Path, int]:
    """(the file, the PID in it); `pid_file` empty means the PID_FILE environment variable."""
    named = pid_file or os.environ.get(PID_FILE_ENV, "")
    if not named:
        raise ActivityFailed(f"No PID file named: set {PID_FILE_ENV} in the chaos entry's env "
                             "(env: {PID_FILE: /run/myservice.pid}) or pass pid_file.")
    path = Path(named).expanduser().resolve()
    try:
        text = path.read_text(encoding="ascii").strip()
    except OSError as exc:
        raise ActivityFailed(f'The PID file "{path}" cannot be read: {exc.strerror or exc}.') from exc
    except UnicodeDecodeError as exc:
        raise ActivityFailed(f'The PID file "{path}" is not a decimal process id.') from exc
    if not text.isdigit():
        raise ActivityFailed(f'The PID file "{path}" holds "{text[:40]}", not a decimal process id.')
    return path, int(text)


def find_process(pid_file: str = "") -> psutil.Process:
    """The live process the PID file names, refused when signalling it could hit the wrong thing."""
    path, pid = read_pid_file(pid_file)
    if pid <= 1:
        raise ActivityFailed(f'The PID file "{path}" names pid {pid}; rushhour never signals init or a process group.')
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            raise psutil.NoSuchProcess(pid)
    except psutil.NoSuchProcess as exc:
        raise ActivityFailed(f'The PID file "{path}" names pid {pid}, and no such process runs.') from exc
    ours = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    if pid in ours:
        raise ActivityFailed(f'The PID file "{path}" names pid {pid}, the harness itself; not signalling it.')
    if os.geteuid() != 0 and proc.uids().real != os.getuid():
        raise ActivityFailed(f'pid {pid} (from "{path}") belongs to another user; run the drill as that user.')
    return proc
