"""The Kubernetes lease keeper's clock: each lease it has seen counted down on the boot clock.

A Kubernetes fault's lease is a wall-clock time in an annotation (`rushhour.io/lease-expires-at`,
a lease Job's start plus its deadline), written by the harness and read by the keeper on the same
host. The keeper compares it with the wall clock only once: the first time it sees a given end on
an object, it takes the time left (that end less the wall clock, at least 0 and at most
`MAX_LEASE_S`, the longest lease a fault may have) and counts that down on the machine's boot clock
(`rushhour.experiments.leasefiles.lease_clock`: setting the date does not move it). A renewal is
another end, taken afresh the same way; an object whose lease cannot be read is over. So a wall
clock stepped back once the keeper has seen a lease does not extend it, and one stepped forward
does not end it later (nor sooner). What is not caught: a step in the moment between the harness
writing an end and the keeper's next look (every 2 s); the harness's next renewal, written on the
stepped clock, corrects it, and without one the in-cluster sweeper, on the cluster's clock, ends it.
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

    def expired(self, kind: str, name: str, expires_at: float | None) -> bool:
        """A `Judge`: the lease of `kind` `name` is over (its end first seen at `expires_at`)."""
        if expires_at is None:
            return True
        now, seen = self._steady(), self._seen.get((kind, name))
        if seen is None or seen.expires_at != expires_at:
            left = min(max(0.0, expires_at - self._wall()), self._longest_s)
            seen = self._seen[(kind, name)] = _Seen(expires_at, now + left)
        return seen.ends <= now
