"""Entry point that runs the `chaos` command in a child process of the drill.

The timeline stops a running experiment with SIGINT because that is the one signal Chaos
Toolkit turns into an interruption that still plays the rollbacks (SIGTERM raised inside a
Python activity is swallowed as a failed activity, and SIGUSR2 skips rollbacks). A process
started from a shell job that ignores SIGINT would inherit the ignore, so the handler is put
back before Chaos Toolkit starts.

When the drill dies (even by SIGKILL) the kernel interrupts this run (its parent-death signal is
SIGINT), so the rollbacks play; a watchdog then gives them `ORPHAN_GRACE_S` and ends the process,
so an orphaned run never lingers. A run whose drill died before it could even start exits at once.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from rushhour.kernel.contract import ExitCode

PARENT_ENV = "RUSHHOUR_DRILL_PID"
ORPHAN_GRACE_S = 20.0
EXIT_ORPHANED = ExitCode.INVALID
POLL_S = 0.5


def _watch_parent(parent: int, grace_s: float) -> None:
    """Once the drill is gone, allow the rollbacks `grace_s`, then end the process."""
    while os.getppid() == parent:
        time.sleep(POLL_S)
    time.sleep(grace_s)
    os._exit(EXIT_ORPHANED)


def main() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    parent = int(os.environ.get(PARENT_ENV) or 0)
    if parent:
        if os.getppid() != parent:  # the drill died before the parent-death signal was armed
            raise SystemExit(EXIT_ORPHANED)
        threading.Thread(target=_watch_parent, args=(parent, ORPHAN_GRACE_S), name="orphan-watch", daemon=True).start()
    from chaostoolkit.cli import cli

    cli(prog_name="chaos")


if __name__ == "__main__":
    main()
