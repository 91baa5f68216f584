"""Ctrl-C, SIGTERM and SIGHUP during a drill: stop cleanly, and never before the results are written.

The first signal asks the drill to stop (it finishes its tick and tears down). A second one
while the drill is still booting or loading cuts that step short (KeyboardInterrupt), since the
operator clearly means it. But from the moment teardown begins, signals are only acknowledged:
teardown stops the load, plays the rollbacks, stops the server and writes `requests.parquet`,
`summary.json` and the report, and a second Ctrl-C or a SIGTERM from a supervisor must not
throw that away. A SIGKILL still can; the children die with the drill and `rushhour report DIR`
rebuilds the results from what was written.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["HANDLED", "SignalGuard"]

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class SignalGuard:
    """Installs the drill's handlers; `tearing_down` switches later signals to acknowledge-only."""

    def __init__(self, on_stop: Callable[[str], None], say: Callable[[str], None]) -> None:
        self._on_stop = on_stop
        self._say = say
        self._previous: dict[int, Any] = {}
        self.received: list[str] = []
        self.tearing_down = False

    def install(self) -> SignalGuard:
        self._previous = {sig: signal.signal(sig, self._handle) for sig in HANDLED}
        return self

    def restore(self) -> None:
        for sig, old in self._previous.items():
            signal.signal(sig, old)
        self._previous = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        if len(self.received) == 1:
            self._on_stop(name)
        elif self.tearing_down:
            self._say(f"{name}: already stopping; the results are being written and the report built, "
                      "please wait (SIGKILL leaves the parts for `rushhour report`).")
        else:
            raise KeyboardInterrupt
