"""The Kubernetes lease keeper's clock: each lease it has seen counted down on the boot clock.

A Kubernetes fault's lease is a wall-clock time in an annotation (`rushhour.io/lease-expires-at`,
a lease Job's start plus its deadline), written by the harness and read by the keeper on the same
host. The keeper compares it with the wall clock only once: the first time it sees a given end on
an object, it takes the time left (that end less the wall clock, at least 0 and at most
`MAX_LEASE_S`, the longest lease a fault may have) and counts that down on the machine's boot clock
(`rushhour.experiments.leasefiles.lease_clock`: setting the date does not move it). A renewal is
another end, taken afresh the same way; an object whose lease cannot be read is over. So a wall
clock stepped back once the keeper has seen a lease does not extend it, and one stepped forward
does not end it later (nor sooner).

A step back since the keeper started, between two of its sweeps (every 2 s; one that failed does
not count), shows as the wall clock having moved less than the steady clock; an end first seen at
the sweep after it may have been written before the step, so the step is taken off its time left:
it is not extended either. A renewal written on the stepped clock and first seen at that same
sweep ends early by the step (the safe side).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rushhour.experiments.leasefiles import lease_clock
from rushhour.experiments.leases import MAX_LEASE_S

__all__ = ["Judge", "SteadyLeases", "judged_at"]

Judge = Callable[[str, str, float | None], bool]
"""Whether the lease of one object (its kind, its name, its end in epoch seconds or None) is over."""


def judged_at(now: float) -> Judge:
    """The plain judgement of a one-off sweep: a lease is over once its end is at or before `now`
    (epoch seconds), or when it cannot be read."""

    def expired(kind: str, name: str, expires_at: float | None) -> bool:
        return expires_at is None or expires_at <= now

    return expired


@dataclass(frozen=True)
class _Seen:
    expires_at: float
    ends: float  # on the steady clock


class SteadyLeases:
    """The leases one keeper has seen, each with its end on the steady clock (see the module).

    wall: the clock the ends are written on (epoch seconds).
    steady: the clock they are counted down on (the boot clock unless told).
    longest_s: the most time left a lease can be given when first seen.
    """

    def __init__(self, *, wall: Callable[[], float] = time.time, steady: Callable[[], float] = lease_clock,
                 longest_s: float = MAX_LEASE_S) -> None:
        self._wall, self._steady, self._longest_s = wall, steady, longest_s
        self._seen: dict[tuple[str, str], _Seen] = {}
        self._settled: float | None = None  # the wall clock less the steady one, at the last sweep that went through
        self._now, self._offset, self._stepped_back_s = 0.0, 0.0, 0.0
        self.look()
        self.settled()  # a step from here on is a step

    def look(self) -> Judge:
        """Read both clocks for one sweep, noting how far the wall clock was stepped back since the last
        sweep that went through; the judge of that sweep's leases."""
        self._now = self._steady()
        self._offset = self._wall() - self._now
        self._stepped_back_s = 0.0 if self._settled is None else max(0.0, self._settled - self._offset)
        return self.expired

    def settled(self) -> None:
        """The sweep of the last `look` went through: its clocks are what the next look is compared with."""
        self._settled = self._offset

    def expired(self, kind: str, name: str, expires_at: float | None) -> bool:
        """A `Judge`, at the last `look`: the lease of `kind` `name` is over (its end is `expires_at`)."""
        if expires_at is None:
            return True
        seen = self._seen.get((kind, name))
        if seen is None or seen.expires_at != expires_at:
            left = expires_at - (self._now + self._offset) - self._stepped_back_s
            seen = self._seen[(kind, name)] = _Seen(expires_at, self._now + min(max(0.0, left), self._longest_s))
        return seen.ends <= self._now
