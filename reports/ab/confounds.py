"""Confounds an A/B night checks before it gives a verdict: one arm answering from its cache.

A long-lived baseline that has seen the night's texts answers them from its cache in a few
milliseconds, while a freshly booted candidate computes them: the ratio then measures the cache,
not the versions. Where the protocol reports cache hits (the `cached` column: the reference
server's `cached` field), the share of answered requests served from cache is compared per arm;
a difference beyond CACHE_GAP, shown by its interval, makes the night invalid, with a sentence
that says why. Both arms' shares are kept in ab.json either way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.ab.paired import newcombe
from rushhour.reports.rundata.attempts import attempted

CACHE_GAP = 0.05
"""Cache-hit shares of the arms may differ by this much (absolute) before the night is invalid."""
CACHE_TAIL = 0.005
"""Each side's error of the cache-share interval (99%)."""

__all__ = ["CacheCheck", "cache_check"]


@dataclass(frozen=True)
class CacheCheck:
    """Cache-hit shares of the answered requests per arm and whether they differ (the night invalid)."""

    reported: bool
    baseline: float | None
    candidate: float | None
    low: float | None
    high: float | None
    confounded: bool
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cache_check(requests: pd.DataFrame, first_pair: int = 0) -> CacheCheck:
    """Compare the arms' cache-hit shares over the measured pairs (those from `first_pair` on)."""
    if "cached" not in requests.columns:
        return CacheCheck(False, None, None, None, None, False, "")
    cached = requests["cached"]
    measured = (requests["trial"].to_numpy(np.int64) // 2 >= first_pair) & attempted(requests)
    answered = measured & requests["ok"].to_numpy(bool) & cached.notna().to_numpy()
    if not answered.any():
        return CacheCheck(False, None, None, None, None, False, "")
    hits = cached.fillna(False).to_numpy(bool)
    arm = requests["arm"].astype(str).to_numpy()
    counts = {a: (int((answered & hits & (arm == a)).sum()), int((answered & (arm == a)).sum()))
              for a in ("baseline", "candidate")}
    if min(n for _, n in counts.values()) == 0:
        return CacheCheck(False, None, None, None, None, False, "")
    (bh, bn), (ch, cn) = counts["baseline"], counts["candidate"]
    low, high = newcombe(ch, cn, bh, bn, CACHE_TAIL)
    confounded = bool(low > CACHE_GAP or high < -CACHE_GAP)
    sentence = _sentence(bh / bn, ch / cn) if confounded else ""
    return CacheCheck(True, bh / bn, ch / cn, low, high, confounded, sentence)


def _sentence(baseline: float, candidate: float) -> str:
    more, fewer = ("baseline", "candidate") if baseline > candidate else ("candidate", "baseline")
    shares = {"baseline": baseline, "candidate": candidate}
    return (f"the {more} answered {100 * shares[more]:.0f}% of requests from its cache and the {fewer} "
            f"{100 * shares[fewer]:.0f}%, so the arms did not do the same work and a ratio would measure the cache, "
            f"not the versions (a long-lived {more} that had seen these texts, or a cache warmed by one arm only); "
            "run with fresh texts (the default: no --seed) or flush both caches first")
