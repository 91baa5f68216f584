"""Clock offset between a remote worker and the master, and the version both sides must share.

Hosts disagree about the wall clock. A worker fires at the master's start time `t0` on its own
clock, so before the start it measures how far the master's clock is ahead of its own with a few
NTP-style round trips (Cristian's method: the sample with the shortest round trip bounds the
error by half that round trip) and converts `t0` into its own clock. Every later stamp is taken
relative to that converted start on the worker's monotonic clock, so `intended_s` and `sent_s`
come back already corrected.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

__all__ = ["ClockSample", "ClockSync", "estimate_offset", "software_version"]


@dataclass(frozen=True)
class ClockSample:
    """One round trip: worker sent at `sent`, master stamped `master`, worker heard back at `back`."""

    sent: float
    master: float
    back: float

    @property
    def rtt_s(self) -> float:
        return self.back - self.sent

    @property
    def offset_s(self) -> float:
        """Master clock minus worker clock, assuming the two legs took equally long."""
        return self.master - (self.sent + self.back) / 2.0


@dataclass(frozen=True)
class ClockSync:
    """The estimate kept: master minus worker clock, and its error bound (half the round trip)."""

    offset_s: float
    rtt_s: float

    def to_worker_clock(self, master_time: float) -> float:
        return master_time - self.offset_s

    @property
    def error_bound_s(self) -> float:
        return self.rtt_s / 2.0


def estimate_offset(samples: list[ClockSample]) -> ClockSync:
    """The offset of the sample with the shortest round trip (the least room for asymmetry)."""
    if not samples:
        raise ValueError("No clock sample came back from the master; cannot place the start time.")
    best = min(samples, key=lambda s: s.rtt_s)
    return ClockSync(offset_s=best.offset_s, rtt_s=best.rtt_s)


def software_version() -> str:
    """What a worker must match exactly to join a master: rushhour's and Locust's versions (read
    from the installed metadata: importing Locust would monkey-patch the caller)."""
    return f"rushhour {_installed('rushhour')}, locust {_installed('locust')}"


def _installed(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"
