"""The lease keeper: `python -m rushhour.experiments.leasekeeper UNDO AFTER_S ARGUMENTS_JSON`.

Started detached, before the fault it guards is injected, by a fault that its target cannot time
out by itself (see `rushhour.experiments.leases`). Its lease is renewable: with `lease_file` among the
arguments, the file's end (renewed by whoever holds the fault) is the deadline, and the file's
removal means the fault was undone; without one, AFTER_S from the start. It first waits for the
fault to appear (its probe reports it), so the fault not being there yet is never taken for an
undo; once the fault has appeared and is gone again, it exits. When the lease lapses it undoes the
fault once and exits. Kubernetes faults carry their lease on the objects themselves, so their
keeper sweeps until nothing of rushhour's is left (`rushhour.experiments.kubernetes.leases.keep_swept`).
Only the undo actions named in `UNDO` can be run, with JSON arguments. What it did goes to its
standard error, which `spawn_keeper` sends to `lease-keeper.log` in the drill's results folder.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rushhour.experiments.leases import read_lease

__all__ = ["UNDO", "keep"]

# undo name -> (module, undo function, "is the target whole?" probe or None)
UNDO: dict[str, tuple[str, str, str | None]] = {
    "start_redis": ("rushhour.experiments.local.redis", "start_redis", "redis_running"),
    "restore_pool_size": ("rushhour.experiments.local.scaling", "restore_pool_size", "pool_size_is"),
    "resume_process": ("rushhour.experiments.service.actions", "resume_pid", "pid_not_paused"),
    "remove_toxic": ("rushhour.experiments.service.network", "keep_toxic_removed", None),
    "sweep_kubernetes": ("rushhour.experiments.kubernetes.leases", "keep_swept", None),
}
PROBE_ARGUMENTS = ("port", "pid", "url", "pool", "nodes")
"""The undo's arguments its probe takes too (what the fault was done to)."""
CHECK_EVERY_S = 1.0


def keep(undo: str, after_s: float, arguments: dict[str, Any], *, clock: Callable[[], float] = time.time,
         sleep: Callable[[float], None] = time.sleep) -> str:
    """Wait out the (renewable) lease, then undo: "healed"; "undone" when the fault was seen
    and then gone, or its lease file removed, first."""
    if undo not in UNDO:
        raise ValueError(f'"{undo}" is not an undo the lease keeper knows ({", ".join(sorted(UNDO))}).')
    module, func, probe_name = UNDO[undo]
    loaded = importlib.import_module(module)
    action = getattr(loaded, func)
    if probe_name is None:
        return str(action(**arguments, after_s=after_s, clock=clock, sleep=sleep))
    probe = getattr(loaded, probe_name)
    args = dict(arguments)
    path = Path(args.pop("lease_file")) if args.get("lease_file") else None
    probe_args = {k: v for k, v in args.items() if k in PROBE_ARGUMENTS}
    deadline, seen = clock() + max(0.0, after_s), False
    while True:
        if path is not None:
            end = read_lease(path, clock)
            if end is None:
                return "undone"
            deadline = end
        whole = bool(probe(**probe_args))
        if seen and whole:
            _remove(path)
            return "undone"
        seen = seen or not whole
        left = deadline - clock()
        if left <= 0:
            action(**args)
            _remove(path)
            return "healed"
        sleep(min(CHECK_EVERY_S, left))


def _remove(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        print("usage: python -m rushhour.experiments.leasekeeper UNDO AFTER_S ARGUMENTS_JSON", file=sys.stderr)
        return 2
    try:
        outcome = keep(args[0], float(args[1]), json.loads(args[2]))
    except Exception as exc:  # noqa: BLE001 - a detached process has nobody to raise to
        print(f"lease keeper: {args[0]} failed: {exc}", file=sys.stderr)
        return 1
    print(f"lease keeper: {args[0]} {outcome}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
