"""Leases: every fault rushhour injects ends by itself, whoever is left to end it.

A held fault gets a short lease (20 s, or `RUSHHOUR_LEASE_S`) that whoever holds it renews every
5 s (`hold_lease`, a daemon thread in the `chaos run` or harness process that injected it) for the
hold plus a margin, the time the rollbacks need. When the renewals stop, because the harness or
the chaos run was killed, the fault is undone within one lease, however long the hold was meant to
be: the gateway's fault proxy and supervisor time out what they hold themselves; where the target
cannot (a stopped Redis, a Kubernetes NetworkPolicy, cordon or scale-down), `spawn_keeper` starts a
*lease keeper*, a small detached process in its own session that watches the renewable lease (a
lease file, or the object's own annotation) and undoes the fault once it lapses (see
`rushhour.experiments.leasekeeper`). The keeper is started before the fault is injected, so no crash in
between can leave a fault without one.

A fault injected without a hold keeps its `ttl_s` as its lease, unrenewed.

The margin covers the probes between the end of a hold and the rollbacks: 30 s, or
`RUSHHOUR_LEASE_MARGIN_S`.

Lease files live in this user's private folder and are timed on the machine's boot clock, which
setting the date does not move (`rushhour.experiments.leasefiles`).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.leasefiles import lease_clock, lease_dir, read_end, write_end
from rushhour.kernel.atomic import LinkedOutputError, open_streamed
from rushhour.kernel.processes import child_env

__all__ = [
    "DEFAULT_LEASE_S", "LEASE_ENV", "LEASE_MARGIN_S", "MARGIN_ENV", "RENEW_EVERY_S", "default_lease_s",
    "default_margin_s", "hold_lease", "keeper_log_path", "lease_file", "lease_s", "read_lease", "release", "spawn_keeper",
    "write_lease",
]

DEFAULT_LEASE_S = 20.0
RENEW_EVERY_S = 5.0
LEASE_ENV = "RUSHHOUR_LEASE_S"
LEASE_MARGIN_S = 30.0
MARGIN_ENV = "RUSHHOUR_LEASE_MARGIN_S"
MAX_LEASE_S = 7 * 24 * 3600.0
REPO_ROOT = Path(__file__).resolve().parents[1]
KEEPER_LOG = "lease-keeper.log"


def _seconds_env(name: str, default: float, *, positive: bool) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ActivityFailed(f'{name}="{raw}" is not a number of seconds {"above" if positive else "of"} zero'
                             f'{"" if positive else " or more"}.')
    return value


def default_margin_s() -> float:
    """The time after a hold during which the renewals go on: `RUSHHOUR_LEASE_MARGIN_S`, else 30 s."""
    return _seconds_env(MARGIN_ENV, LEASE_MARGIN_S, positive=False)


def default_lease_s() -> float:
    """The lease of a held fault: `RUSHHOUR_LEASE_S`, else 20 s."""
    return _seconds_env(LEASE_ENV, DEFAULT_LEASE_S, positive=True)


def lease_s(ttl_s: float, hold_s: float = 0.0, lease_margin_s: float | None = None) -> float:
    """The TTL a fault is injected with: the short renewed lease when the experiment holds it
    (`hold_s` > 0; `hold_lease` keeps it alive through the hold), else `ttl_s`."""
    margin = default_margin_s() if lease_margin_s is None else lease_margin_s
    ttl, hold, margin_f = float(ttl_s), float(hold_s), float(margin)
    if hold < 0 or margin_f < 0:
        raise ActivityFailed(f"A fault's hold ({hold_s!r} s) and lease margin ({margin!r} s) cannot be negative.")
    lease = default_lease_s() if hold > 0 else ttl
    if not 0 < lease <= MAX_LEASE_S:  # NaN fails this too
        raise ActivityFailed(f"A fault's lease must be between 0 and {MAX_LEASE_S:g} s, not {lease!r}.")
    return lease


class _Renewal:
    """Renews one held fault's lease from a daemon thread until the hold (plus margin) is over,
    the fault is gone (`renew` returned False), or `release` cancels it."""

    def __init__(self, renew: Callable[[float], bool], lease: float, until: float, every_s: float) -> None:
        self._renew, self._lease, self._until, self._every = renew, lease, until, every_s
        self.stopped = threading.Event()
        self.renewals = 0

    def run(self) -> None:
        while not self.stopped.wait(self._every) and time.monotonic() < self._until:
            try:
                if not self._renew(self._lease):
                    break
                self.renewals += 1
            except Exception:  # noqa: BLE001 - a missed renewal is retried; the lease may lapse (safe side)
                continue
        self.stopped.set()


_HELD: dict[str, _Renewal] = {}
_LOCK = threading.Lock()


def hold_lease(key: str, renew: Callable[[float], bool], lease: float, hold_s: float,
               *, every_s: float | None = None, margin_s: float | None = None) -> None:
    """Keep a fault's lease renewed while this process holds it (`hold_s` plus the margin).

    key: names the fault (e.g. "http://gw|quality-0"); a new hold of the same key replaces the old.
    renew: called with the lease in seconds; returns False when there is nothing left to hold.
    """
    if hold_s <= 0:
        return
    margin = default_margin_s() if margin_s is None else margin_s
    every = min(RENEW_EVERY_S, lease / 4.0) if every_s is None else every_s
    renewal = _Renewal(renew, lease, time.monotonic() + hold_s + margin, every)
    with _LOCK:
        old = _HELD.pop(key, None)
        _HELD[key] = renewal
    if old is not None:
        old.stopped.set()
    threading.Thread(target=renewal.run, name=f"lease-{key}", daemon=True).start()


def release(prefix: str) -> int:
    """Stop renewing every held fault whose key starts with `prefix` (the rollback undid them)."""
    with _LOCK:
        keys = [key for key in _HELD if key.startswith(prefix)]
        gone = [_HELD.pop(key) for key in keys]
    for renewal in gone:
        renewal.stopped.set()
    return len(gone)


def lease_file(name: str) -> Path:
    """Where the renewable lease of a fault named `name` lives (read by its lease keeper): in this
    user's private lease folder (`rushhour.experiments.leasefiles`; LeaseFolderError when it is not private)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return lease_dir() / f"{safe}.json"


def write_lease(path: Path, lease: float) -> bool:
    """Renew a lease file: it now ends `lease` seconds from now (written whole, atomically, never
    through a link). False when the file is gone (the fault was undone and its keeper removed it)."""
    if not os.path.lexists(path):
        return False
    write_end(path, lease)
    return True


def read_lease(path: Path, clock: Callable[[], float] | None = None) -> float | None:
    """The lease's end on `clock` (default `time.time`: epoch seconds), reckoned from the time left on the
    boot clock, so a wall clock stepped back since it was written does not extend it; None when the
    file is gone, 0.0 when it is a link or unreadable (expired)."""
    end = read_end(path)
    if end is None or end == 0.0:
        return end
    return (clock or time.time)() + (end - lease_clock())


def new_lease_file(name: str, lease: float) -> Path:
    """Create the lease file of a fault about to be injected (before its keeper starts)."""
    path = lease_file(name)
    write_end(path, lease)
    return path


def spawn_keeper(undo: str, after_s: float, arguments: dict[str, Any], secrets: Mapping[str, str] | None = None) -> int:
    """Start a detached lease keeper for `undo` with `arguments`; returns its pid.

    undo: one of `rushhour.experiments.leasekeeper.UNDO`.
    after_s: the lease; with a `lease_file` in `arguments`, the file's (renewable) end is used.
    secrets: variables the undo needs (e.g. the admin token), handed to the keeper's environment
        only (never its command line); no other rushhour secret reaches it.
    """
    argv = [sys.executable, "-m", "rushhour.experiments.leasekeeper", undo, f"{float(after_s):.3f}", json.dumps(arguments)]
    env = child_env(extra=secrets)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    log_path = keeper_log_path()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        log: IO[bytes] | int = open_streamed(log_path, append=True)
    except LinkedOutputError:
        log = subprocess.DEVNULL  # a link planted at the log is never written through; the keeper starts all the same
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=env, cwd=REPO_ROOT)
    finally:
        if not isinstance(log, int):
            log.close()
    return proc.pid


def keeper_log_path(argv: list[str] | None = None) -> Path:
    """Where a lease keeper writes what it did: `lease-keeper.log` beside the journal of the
    `chaos run` that started it (the drill's `chaos/` results folder), else in the lease folder."""
    args = list(sys.argv if argv is None else argv)
    for index, arg in enumerate(args):
        if arg.startswith("--journal-path="):
            return Path(arg.split("=", 1)[1]).resolve().parent / KEEPER_LOG
        if arg == "--journal-path" and index + 1 < len(args):
            return Path(args[index + 1]).resolve().parent / KEEPER_LOG
    return lease_file("lease-keeper").with_suffix(".log")
