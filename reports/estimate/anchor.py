"""Whether a machine answered the same load alike at two moments: two windows at one rate, side by side.

A capacity figure can only be as good as the machine it was measured on. A search measures one
fixed reference rate (its anchor) at its start and again at its end; if the machine's answer to
that same load changed beyond the noise, the figure holds for the machine as it ran, not for a
steady one. The two windows are compared by the ratio of their geometric-mean latencies (end over
start): the difference of the mean log latencies, each mean's variance from its window's
effective sample size by batch means (`rushhour.reports.estimate.blocks.dependence`), so the
interval stays honest when one window's requests share a slow or fast spell. The machine counts
as changed when the whole interval lies outside 1 +/- `tolerance`. A search that compares its
anchor with several later windows takes each at `family_confidence`, so that all of them together
flag a steady machine no more often than one comparison would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from rushhour.reports.estimate.blocks import dependence

__all__ = ["FLAG_CONFIDENCE", "METHOD", "MachineDrift", "family_confidence", "machine_drift"]

METHOD = "ratio of geometric-mean latencies, batch means"
"""The method named beside the ratio's interval."""
FLAG_CONFIDENCE = 0.99
"""The interval's level: a steady machine is flagged at most 1% of the time at nominal, so that its
measured false-flag rate stays under 5% at the Clopper-Pearson bound on the whole-search bench."""
MIN_REQUESTS = 20
"""Fewest answered requests a window needs before the two are compared."""


@dataclass(frozen=True)
class MachineDrift:
    """End over start: the ratio of the anchor windows' geometric-mean latencies and its interval."""

    rate_rps: float
    ratio: float
    low: float
    high: float
    confidence: float
    effective: tuple[float, float]
    """Effective sample sizes of the start and end windows' log latencies."""
    tolerance: float
    method: str = METHOD

    @property
    def changed(self) -> bool:
        """True when the whole interval lies outside 1 +/- `tolerance`: the machine changed beyond the noise."""
        return self.low > 1.0 + self.tolerance or self.high < 1.0 / (1.0 + self.tolerance)

    def sentence(self, later: str = "at the end", earlier: str = "at the start") -> str:
        """The plain words a report prints beside an unconfirmed figure (or that the machine held);
        `later` and `earlier` name the two windows' moments."""
        if not self.changed:
            return (f"the machine answered the same load ({self.rate_rps:.1f} req/s) alike {earlier} and {later} "
                    f"(end/start {self.ratio:.3f}, {100 * self.confidence:.3g}% interval {self.low:.3f}-{self.high:.3f})")
        change = abs(self.ratio - 1.0) * 100.0
        way = "slower" if self.ratio > 1.0 else "faster"
        return (f"the machine answered the same load ({self.rate_rps:.1f} req/s) {change:.0f}% {way} {later} than "
                f"{earlier} ({100 * self.confidence:.3g}% interval {self.low:.3f}-{self.high:.3f}): the figure "
                "holds for the machine as it ran, not a steady one")

    def as_dict(self, later: str = "at the end", earlier: str = "at the start") -> dict[str, object]:
        """The `machine_drift` entry of capacity.json (`later`, `earlier`: as for `sentence`)."""
        return {"rate_rps": round(self.rate_rps, 3), "ratio": round(self.ratio, 4),
                "interval": [round(self.low, 4), round(self.high, 4)], "confidence": self.confidence,
                "effective": [round(e, 1) for e in self.effective], "tolerance": self.tolerance,
                "method": self.method, "changed": self.changed, "sentence": self.sentence(later, earlier)}


def family_confidence(comparisons: int) -> float:
    """The level of each of `comparisons` comparisons with one anchor window, so that a steady
    machine is flagged by any of them at most 1 - FLAG_CONFIDENCE of the time (Bonferroni)."""
    return 1.0 - (1.0 - FLAG_CONFIDENCE) / max(comparisons, 1)


def machine_drift(rate_rps: float, start_ms: np.ndarray, end_ms: np.ndarray, *, confidence: float = FLAG_CONFIDENCE,
                  tolerance: float = 0.0) -> MachineDrift | None:
    """Compare the latencies (time order, milliseconds) of two anchor windows at `rate_rps`; None
    when either holds fewer than `MIN_REQUESTS` answered requests with a positive latency."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"The confidence {confidence:g} must lie between 0 and 1.")
    if tolerance < 0.0:
        raise ValueError(f"The tolerance {tolerance:g} must not be negative.")
    logs = [_logs(start_ms), _logs(end_ms)]
    if min(x.size for x in logs) < MIN_REQUESTS:
        return None
    effective = tuple(dependence(x, confidence).effective for x in logs)
    spread = math.sqrt(sum(float(x.var(ddof=1)) / max(e, 1.0) for x, e in zip(logs, effective, strict=True)))
    shift = float(logs[1].mean() - logs[0].mean())
    z = float(special.ndtri(1.0 - (1.0 - confidence) / 2.0))
    return MachineDrift(rate_rps, math.exp(shift), math.exp(shift - z * spread), math.exp(shift + z * spread),
                        confidence, (effective[0], effective[1]), tolerance)


def _logs(latency_ms: np.ndarray) -> np.ndarray:
    values = np.asarray(latency_ms, dtype=float)
    return np.log(values[np.isfinite(values) & (values > 0.0)])
