"""The lease keeper: `python -m experiments.leasekeeper UNDO AFTER_S ARGUMENTS_JSON`.

Started detached by a fault that its target cannot time out by itself (see `experiments.leases`):
it checks every second whether the fault is already undone (then it exits), and when the lease
runs out it undoes the fault once and exits. It never outlives its lease by more than the undo.
Only the undo actions named in `UNDO` can be run, with JSON arguments.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["UNDO", "keep"]

# undo name -> (module, undo function, "already undone?" probe or None)
UNDO: dict[str, tuple[str, str, str | None]] = {
    "start_redis": ("experiments.local.redis", "start_redis", "redis_running"),
    "sweep_kubernetes": ("experiments.kubernetes.leases", "sweep", None),
}
CHECK_EVERY_S = 1.0




def keep(undo: str, after_s: float, arguments: dict[str, Any], *, clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep) -> str:
    """Wait out the lease, then undo; "undone" when the probe saw the fault gone first."""
    if undo not in UNDO:
        raise ValueError(f'"{undo}" is not an undo the lease keeper knows ({", ".join(sorted(UNDO))}).')
    module, func, probe_name = UNDO[undo]
    loaded = importlib.import_module(module)
    action = getattr(loaded, func)
    probe = getattr(loaded, probe_name) if probe_name else None
    probe_args = {k: v for k, v in arguments.items() if k == "port"}
    deadline = clock() + max(0.0, after_s)
    while (left := deadline - clock()) > 0:
        sleep(min(CHECK_EVERY_S, left))
        if probe is not None and probe(**probe_args):
            return "undone"
    action(**arguments)
    return "healed"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        print("usage: python -m experiments.leasekeeper UNDO AFTER_S ARGUMENTS_JSON", file=sys.stderr)
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
