"""Each SLO's running good/bad counts and burn rates while the drill runs.

The semantics are the report's (`reports.selection`): a latency SLO's event is good when the
request succeeded within the threshold, availability counts every answer, degraded counts ok
answers. Live, an event counts when the request ended, so a failure spends budget at its end
time. Burn rate = bad share in a trailing window / allowed bad share, for both windows of each
page rule in `reports.burn` (scaled into run time by the scenario's time_scale); a window
without events burns nothing (0). Goodput SLOs are a rate over the run, not good/bad events,
and are left to the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reports.burn import PAGE_RULES
from reports.schema import LATENCY_KINDS, SloSpec
from reports.selection import slo_scope, valid_and_bad
from scenarios.run.live_fold import end_times


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
    """One SLO: cumulative good and bad events and when each valid event ended."""

    spec: SloSpec
    good: int = 0
    bad: int = 0
    _times: list[np.ndarray] = field(default_factory=list)
    _bad: list[np.ndarray] = field(default_factory=list)

    def add(self, requests: pd.DataFrame) -> None:
        scope = slo_scope(requests, requests["phase"], self.spec)
        valid, bad = valid_and_bad(requests, self.spec)
        valid, bad = valid & scope, bad & scope
        self.bad += int(bad.sum())
        self.good += int(valid.sum() - bad.sum())
        self._times.append(end_times(requests)[valid])
        self._bad.append(bad[valid])

    def burn_rate(self, now_s: float, window_s: float) -> float:
        """Bad share of the events that ended in (now - window, now], over the allowed share."""
        if not self._times:
            return 0.0
        if len(self._times) > 1:  # one array again, so each call concatenates only what arrived
            self._times[:], self._bad[:] = [np.concatenate(self._times)], [np.concatenate(self._bad)]
        times, bad = self._times[0], self._bad[0]
        inside = (times > now_s - window_s) & (times <= now_s)
        if not inside.any():
            return 0.0
        return float(bad[inside].mean()) / self.spec.allowed_bad_share

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
        return cls([SloTally(spec) for spec in specs if spec.kind not in ("goodput", "drift")], burn_windows(time_scale))

    def add(self, requests: pd.DataFrame) -> None:
        if requests.empty:
            return
        for tally in self.tallies:
            tally.add(requests)

    def burn_rates(self, now_s: float) -> dict[tuple[str, str], float]:
        """(slo, window label) -> burn rate now."""
        return {(t.spec.name, label): t.burn_rate(now_s, seconds)
                for t in self.tallies for label, seconds in self.windows}
