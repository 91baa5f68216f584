"""Leases: every fault rushhour injects ends by itself, whoever is left to end it.

A fault's lease is its time to live: `ttl_s`, raised to `hold_s + margin` when an experiment
holds the fault, so the lease never runs out mid-hold and the rollback normally heals first.
Where the target keeps the lease itself (the gateway's fault proxy) nothing more is needed.
Where it cannot (a stopped Redis, a Kubernetes NetworkPolicy or cordon), `spawn_keeper` starts a
*lease keeper*: a small detached process, in its own session and not tied to the harness or the
chaos run, that waits out the lease and then undoes the fault (see `experiments.leasekeeper`).
A harness or chaos run killed with SIGKILL therefore still leaves every fault healed in time.

The margin covers the probes between the end of a hold and the rollbacks: 30 s, or
`RUSHHOUR_LEASE_MARGIN_S` (a scenario's chaos entry may set it in `env:`, e.g. for short
drills whose faults must not outlive a killed harness by half a minute).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed

__all__ = ["LEASE_MARGIN_S", "MARGIN_ENV", "default_margin_s", "lease_s", "spawn_keeper"]

LEASE_MARGIN_S = 30.0
MARGIN_ENV = "RUSHHOUR_LEASE_MARGIN_S"
MAX_LEASE_S = 7 * 24 * 3600.0
REPO_ROOT = Path(__file__).resolve().parents[1]


def default_margin_s() -> float:
    """The margin after a hold: `RUSHHOUR_LEASE_MARGIN_S` when set, else 30 s."""
    raw = os.environ.get(MARGIN_ENV, "").strip()
    if not raw:
        return LEASE_MARGIN_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0:
        raise ActivityFailed(f'{MARGIN_ENV}="{raw}" is not a number of seconds of zero or more.')
    return value


def lease_s(ttl_s: float, hold_s: float = 0.0, lease_margin_s: float | None = None) -> float:
    """The TTL a fault is injected with: `ttl_s`, raised to `hold_s + margin` when the
    experiment holds the fault (`hold_s` > 0), so the dead man's switch never fires mid-hold."""
    margin = default_margin_s() if lease_margin_s is None else lease_margin_s
    ttl, hold, margin_f = float(ttl_s), float(hold_s), float(margin)
    if hold < 0 or margin_f < 0:
        raise ActivityFailed(f"A fault's hold ({hold_s!r} s) and lease margin ({margin!r} s) cannot be negative.")
    lease = max(ttl, hold + margin_f) if hold > 0 else ttl
    if not 0 < lease <= MAX_LEASE_S:  # NaN fails this too
        raise ActivityFailed(f"A fault's lease must be between 0 and {MAX_LEASE_S:g} s, not {lease!r}.")
    return lease


def spawn_keeper(undo: str, after_s: float, arguments: dict[str, Any]) -> int:
    """Start a detached lease keeper that runs `undo` with `arguments` after `after_s` seconds
    (or exits early once the fault is undone); returns its pid.

    undo: one of `experiments.leasekeeper.UNDO` ("start_redis", "sweep_kubernetes").
    """
    argv = [sys.executable, "-m", "experiments.leasekeeper", undo, f"{float(after_s):.3f}", json.dumps(arguments)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True, env=env, cwd=REPO_ROOT)
    return proc.pid
