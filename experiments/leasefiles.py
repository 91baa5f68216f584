"""Lease files: a fault's renewable end, kept where nobody but this user can write it.

The folder is this user's own: `RUSHHOUR_LEASE_DIR`, else `$XDG_RUNTIME_DIR/rushhour-leases`,
else `<temp>/rushhour-leases-<uid>`. It is created with mode 0700 and checked every time it is
used: a real folder (not a link), owned by this user, open to nobody else; anything else is
refused, naming the folder and what is wrong with it. A lease is written whole to a temporary
file that `mkstemp` creates exclusively under an unpredictable name, then renamed over the lease
(a rename replaces a link planted there; it never writes through one); it is read without
following links, and a link or an unreadable file reads as a lease already over, so the fault is
undone (the safe side).

The end of a lease is on the machine's boot clock (`CLOCK_BOOTTIME`: it counts suspend, every
process on the machine shares it, and setting the date does not move it), so a wall clock
stepped back cannot extend a fault whose keeper runs on the same machine. The wall-clock end is
written beside it for people reading the file.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from chaoslib.exceptions import ActivityFailed

__all__ = ["LEASE_DIR_ENV", "LeaseFolderError", "lease_clock", "lease_dir", "read_end", "write_end"]

LEASE_DIR_ENV = "RUSHHOUR_LEASE_DIR"
END_FIELD = "expires_boot"
WALL_FIELD = "expires_at"


class LeaseFolderError(ActivityFailed):
    """The lease folder is a link, not a folder, someone else's, or open to others."""


def lease_clock() -> float:
    """Seconds on the machine's boot clock (monotonic, shared by every process, not set with the date)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


def lease_dir(environ: Mapping[str, str] | None = None) -> Path:
    """This user's lease folder, created (0700) if missing, checked to be private (LeaseFolderError)."""
    env = os.environ if environ is None else environ
    if env.get(LEASE_DIR_ENV):
        folder = Path(env[LEASE_DIR_ENV])
    elif env.get("XDG_RUNTIME_DIR"):
        folder = Path(env["XDG_RUNTIME_DIR"]) / "rushhour-leases"
    else:
        folder = Path(tempfile.gettempdir()) / f"rushhour-leases-{os.getuid()}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    check_private(folder)
    return folder


def check_private(folder: Path) -> None:
    """Raise LeaseFolderError unless `folder` is a real folder of this user's that nobody else may enter."""
    info = os.lstat(folder)
    where = f'The lease folder "{folder}"'
    if stat.S_ISLNK(info.st_mode):
        raise LeaseFolderError(f"{where} is a symbolic link; remove it (or set {LEASE_DIR_ENV} to a folder of yours).")
    if not stat.S_ISDIR(info.st_mode):
        raise LeaseFolderError(f"{where} is not a folder; remove it (or set {LEASE_DIR_ENV}).")
    if info.st_uid != os.getuid():
        raise LeaseFolderError(f"{where} belongs to user id {info.st_uid}, not to this user ({os.getuid()}); "
                               f"set {LEASE_DIR_ENV} to a folder of yours.")
    if info.st_mode & 0o077:
        raise LeaseFolderError(f"{where} is open to other users (mode {stat.S_IMODE(info.st_mode):04o}); "
                               "make it 0700 or remove it.")


def write_end(path: Path, lease_s: float, fields: Mapping[str, object] | None = None) -> None:
    """The lease at `path` now ends `lease_s` seconds from now: written whole under a fresh, exclusive
    temporary name, then renamed over `path` (never through a link). `fields` are written beside the
    end (what the fault is, for a reader that applies it)."""
    check_private(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=".lease-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({**(fields or {}), END_FIELD: lease_clock() + lease_s, WALL_FIELD: time.time() + lease_s}, out)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_end(path: Path) -> float | None:
    """The lease's end on `lease_clock`; None when the file is gone; 0.0 (over) when it is a link,
    not readable, or not a lease."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError:  # ELOOP: a link planted where the lease was
        return 0.0
    try:
        with os.fdopen(fd, encoding="utf-8") as lease:
            return float(json.load(lease)[END_FIELD])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0
