"""Each SLO's running good/bad counts and burn rates while the drill runs.

The semantics are the report's (`rushhour.reports.rundata.selection`): a latency SLO's event is good when the
request succeeded within the threshold, availability counts every answer, degraded counts ok
answers. Live, an event counts when the request ended, so a failure spends budget at its end
time. Burn rate = bad share in a trailing window / allowed bad share, for both windows of each
page rule in `rushhour.reports.measures.burn` (scaled into run time by the scenario's time_scale); a window
without events burns nothing (0). Goodput SLOs are a rate over the run, not good/bad events,
and are left to the report. Events are kept as counts per time bin (a ring as long as the longest
window, bins a fiftieth of the shortest), never one per request, so a window's edges are resolved
to a fiftieth of the shortest window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rushhour.reports.measures.burn import PAGE_RULES
from rushhour.reports.rundata.selection import slo_scope, valid_and_bad
from rushhour.reports.schema import LATENCY_KINDS, SloSpec
from rushhour.scenarios.run.live.fold import end_times
from rushhour.scenarios.run.live.hist import TimeRing

BINS_PER_SHORT_WINDOW = 50


def window_name(model_seconds: float) -> str:
    """A page-rule window as the SRE workbook names it, on the model clock: 3600 -> "1h"."""
    if model_seconds % 3600 == 0:
        return f"{model_seconds / 3600:g}h"
    if model_seconds % 60 == 0:
        return f"{model_seconds / 60:g}m"
    return f"{model_seconds:g}s"


def burn_windows(time_scale: float) -> list[tuple[str, float]]:
    """(label, run seconds) for every window of every page rule, long before short."""
    out: list[tuple[str, float]] = []
    for long_s, short_s, _threshold in PAGE_RULES:
        out += [(window_name(long_s), long_s / time_scale), (window_name(short_s), short_s / time_scale)]
    return out


@dataclass
class SloTally:
    """One SLO: cumulative good and bad events, and per time bin how many valid and bad ended."""

    spec: SloSpec
    good: int = 0
    bad: int = 0
    windows_s: tuple[float, ...] = (3600.0, 300.0)
    _ring: TimeRing = field(init=False, repr=False)

    def __post_init__(self) -> None:
        shortest, longest = min(self.windows_s), max(self.windows_s)
        self._ring = TimeRing(bin_s=shortest / BINS_PER_SHORT_WINDOW, span_s=longest, shape=(2,))  # valid, bad

    def add(self, requests: pd.DataFrame) -> None:
        scope = slo_scope(requests, requests["phase"], self.spec)
        valid, bad = valid_and_bad(requests, self.spec)
        valid, bad = valid & scope, bad & scope
        self.bad += int(bad.sum())
        self.good += int(valid.sum() - bad.sum())
        ends = end_times(requests)
        self._ring.add(ends[valid], (np.zeros(int(valid.sum()), dtype=np.int64),))
        self._ring.add(ends[bad], (np.ones(int(bad.sum()), dtype=np.int64),))

    def burn_rate(self, now_s: float, window_s: float) -> float:
        """Bad share of the events that ended in (now - window, now], over the allowed share."""
        valid, bad = self._ring.window(now_s, window_s)
        if valid == 0:
            return 0.0
        return float(bad / valid) / self.spec.allowed_bad_share

    @property
    def threshold_s(self) -> float | None:
        return float(self.spec.threshold_ms) / 1000.0 if self.spec.kind in LATENCY_KINDS and self.spec.threshold_ms else None


@dataclass
class SloBoard:
    """Every good/bad SLO of a scenario, fed the same merged rows as the fold."""

    tallies: list[SloTally]
    windows: list[tuple[str, float]]

    @classmethod
    def for_specs(cls, specs: list[SloSpec], time_scale: float) -> SloBoard:
        windows = burn_windows(time_scale)
        seconds = tuple(s for _, s in windows)
        return cls([SloTally(spec, windows_s=seconds) for spec in specs if spec.kind not in ("goodput", "drift")],
                   windows)

    def add(self, requests: pd.DataFrame) -> None:
        if requests.empty:
            return
        for tally in self.tallies:
            tally.add(requests)

    def burn_rates(self, now_s: float) -> dict[tuple[str, str], float]:
        """(slo, window label) -> burn rate now."""
        return {(t.spec.name, label): t.burn_rate(now_s, seconds)
                for t in self.tallies for label, seconds in self.windows}
