"""Teardown that always reaches its last step: stop the load, the faults, the servers, then write
what was measured, each step run even when one before it failed.

A drill and an A/B run end the same way whatever happened (a finished schedule, Ctrl-C, a server
that died): the results are data, so nothing that goes wrong while stopping may keep them from
being written. A failing step is said as a warning with its name and the error, never raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["run_every_step"]


def run_every_step(steps: Iterable[Callable[[], object]], say: Callable[[str], None]) -> list[str]:
    """Call each step in order; returns the names of the steps that raised (each one said)."""
    failed = []
    for step in steps:
        name = getattr(step, "__name__", repr(step)).strip("_")
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - teardown must reach every step
            failed.append(name)
            say(f"warning: {name} failed: {exc}")
    return failed
