"""The drill's signal guard: stop on the first signal, and never die during teardown."""

from __future__ import annotations

import os
import signal

import pytest

from rushhour.scenarios.run.signals import SignalGuard


def test_signal_guard_asks_to_stop_once_then_interrupts_before_teardown() -> None:
    stops: list[str] = []
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN in an xdist worker, Python's own handler otherwise
    guard = SignalGuard(stops.append, lambda text: None).install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stops == ["SIGTERM"]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        guard.restore()
    assert signal.getsignal(signal.SIGINT) is before


def test_signal_guard_only_acknowledges_signals_during_teardown() -> None:
    said: list[str] = []
    guard = SignalGuard(lambda name: None, said.append).install()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        guard.tearing_down = True
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            os.kill(os.getpid(), sig)  # none of these may end the process or raise
    finally:
        guard.restore()
    assert guard.received == ["SIGINT", "SIGINT", "SIGTERM", "SIGHUP"]
    assert len(said) == 3 and "already stopping" in said[0]
