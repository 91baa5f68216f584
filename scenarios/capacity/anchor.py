"""A search's anchor: the machine's answer to one fixed load at the search's start and again at its end.

A capacity figure can only be as good as the machine it was measured on: a machine whose speed
wanders hands a search a pass in a fast spell, and confirming that pass later does not help (the
whole-search bench, docs/benchmarks.md). So the search keeps its first passing step as the anchor
and, once it has a figure, steps once more at that rate from a drained queue; the two windows'
latencies are compared side by side by the statistics core
(`rushhour.reports.estimate.anchor.machine_drift`). When the machine answered the same load
differently beyond the noise, the condition carries `machine_drift` and its figure is marked
unconfirmed.

With the `steps` drift check (`rushhour capacity --drift-check steps`) the search also steps a
short window (`STEP_ANCHOR_S`) at the anchor's rate after every later step, each from a drained
queue, and compares each with the anchor; the anchor's full step at the end runs as with `ends`.
Every comparison with the anchor is taken at `family_confidence` of their number, once the search
has ended, so all of them together flag a steady machine no more often than one comparison would
(the whole-search bench judges them the same way); the first short window that shows the machine
changed names the step after which it changed. It costs a short step per step; it catches a
machine that wanders during the search and back by its end, which the `ends` check cannot see.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rushhour.reports.estimate.anchor import MachineDrift, family_confidence, machine_drift
from rushhour.scenarios.capacity.job import STEP_ANCHOR_S, DriftCheck
from rushhour.scenarios.capacity.search import SearchResult
from rushhour.scenarios.capacity.stepper import StepRecord

__all__ = ["STEP_ANCHOR_S", "Anchor", "window_latencies"]


def window_latencies(record: StepRecord) -> np.ndarray:
    """The answered requests' latencies (ms) in a step's window, in the order they were due."""
    frame = record.requests
    if frame.empty or "latency_ms" not in frame or "intended_s" not in frame:
        return np.zeros(0)
    start, end = record.rules.window
    intended = frame["intended_s"].to_numpy(dtype=float)
    latency = frame["latency_ms"].to_numpy(dtype=float)
    ok = frame["ok"].to_numpy(dtype=bool) if "ok" in frame else np.ones(intended.size, dtype=bool)
    inside = (intended >= start) & (intended < end) & ok & np.isfinite(latency)
    order = np.argsort(intended[inside], kind="stable")
    return latency[inside][order]


@dataclass
class Anchor:
    """The search's first passing step, kept to be measured against a step at its rate at the end."""

    first: StepRecord | None = None
    check_kind: DriftCheck = "ends"
    windows: list[dict[str, Any]] = field(default_factory=list)
    """With `steps`: every short window's comparison with the anchor, in order (filled by `summary`)."""
    _shorts: list[tuple[int, int, np.ndarray]] = field(default_factory=list, repr=False)
    """With `steps`: each short window's latencies, the step it followed and its own step."""

    def keep(self, record: StepRecord) -> None:
        """Keep `record` when it is the search's first pass."""
        if self.first is None and record.assessment.decision == "pass":
            self.first = record

    def wanted(self, result: SearchResult) -> bool:
        """True when the search has a figure to vouch for and an anchor to measure it by."""
        return self.first is not None and result.last_pass is not None and not result.generator_bound

    def _compare(self, latencies: np.ndarray, confidence: float) -> MachineDrift | None:
        assert self.first is not None
        return machine_drift(self.first.rate_rps, window_latencies(self.first), latencies, confidence=confidence)

    @property
    def _level(self) -> float:
        """Each comparison's level: the short windows and the end's, together (module doc)."""
        return family_confidence(len(self._shorts) + 1)

    def after_step(self, record: StepRecord, step_short: Callable[[float], StepRecord],
                   say: Callable[[str], None]) -> None:
        """With the `steps` check: after `record` (not the anchor itself), a short window at the
        anchor's rate (`step_short` starts it from a drained queue), kept to be compared with the
        anchor once the search has ended (`summary`)."""
        if self.check_kind != "steps" or self.first is None or record is self.first:
            return
        short = step_short(self.first.rate_rps)
        latencies = window_latencies(short)
        drift = self._compare(latencies, family_confidence(1))
        if drift is None:
            say(f"anchor after step {record.index}: too few answered requests to compare the machine")
            return
        self._shorts.append((record.index, short.index, latencies))
        say(f"anchor after step {record.index}: end/start {drift.ratio:.3f} (judged with every window at the end)")

    def summary(self, end: dict[str, Any] | None) -> dict[str, Any] | None:
        """With `steps`: capacity.json's `machine_drift` from every short window and the end's
        comparison (`check`), each at the family's level: the first short window that saw the
        machine change, else the end's, else the last short window; None when nothing compared."""
        if not self._shorts:
            return end
        assert self.first is not None
        changed: dict[str, Any] | None = None
        latest: dict[str, Any] = {}
        for after, index, latencies in self._shorts:
            drift = self._compare(latencies, self._level)
            assert drift is not None  # `after_step` kept only windows it could compare
            self.windows.append({"after_step": after, "step": index, "ratio": round(drift.ratio, 4),
                                 "interval": [round(drift.low, 4), round(drift.high, 4)], "changed": drift.changed})
            later, earlier = f"after step {after}", f"at step {self.first.index}"
            latest = drift.as_dict(later, earlier) | {"steps": [self.first.index, index],
                                                      "changed_after_step": after if drift.changed else None}
            changed = changed or (latest if drift.changed else None)
        chosen = changed or end or latest
        return chosen | {"check": "steps", "windows": self.windows}

    def check(self, step_again: Callable[[float], StepRecord], say: Callable[[str], None]) -> dict[str, Any] | None:
        """Step once more at the anchor's rate (`step_again` starts it from a drained queue) and
        compare its window with the anchor's: capacity.json's `machine_drift`, or None when either
        window holds too few answered requests."""
        assert self.first is not None
        rate = self.first.rate_rps
        say(f"anchor: {rate:.1f} req/s again, to compare with step {self.first.index} ...")
        end = step_again(rate)
        drift = self._compare(window_latencies(end), self._level)
        if drift is None:
            say("anchor: too few answered requests in one of its windows to compare the machine")
            return None
        say(f"anchor: {drift.sentence()}")
        return drift.as_dict() | {"steps": [self.first.index, end.index], "check": "ends", "windows": [],
                                   "changed_after_step": None}
