"""Ctrl-C, SIGTERM and SIGHUP during `rushhour capacity`: stop the search, restore, write, exit 3.

The first signal interrupts the search where it is (as Ctrl-C always did), so the condition is
released (the held-down node restarted, the experiment rolled back) and what was measured is
written to capacity.json and capacity.html. Later signals are only acknowledged: a supervisor's
second SIGTERM must not cut the restore short. A SIGKILL still can; then the node's lease, no
longer renewed, brings it back within seconds (see `rushhour.experiments.leases`).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["interruptible"]

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def interruptible(say: Callable[[str], None]) -> Iterator[list[str]]:
    """Within the block the first of SIGINT/SIGTERM/SIGHUP raises KeyboardInterrupt; the list
    yielded holds the names of the signals received."""
    received: list[str] = []

    def handle(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        received.append(name)
        if len(received) == 1:
            say(f"{name}: stopping the search; the condition is restored and what was measured written first.")
            raise KeyboardInterrupt
        say(f"{name}: already stopping; restoring the target and writing the results, please wait.")

    previous: dict[int, Any] = {sig: signal.signal(sig, handle) for sig in HANDLED}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
