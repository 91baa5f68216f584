"""Confounds an A/B night checks before it gives a verdict: one arm answering from its cache.

A long-lived baseline that has seen the night's texts answers them from its cache in a few
milliseconds, while a freshly booted candidate computes them: the ratio then measures the cache,
not the versions. Where the protocol reports cache hits (the `cached` column: the reference
server's `cached` field; a night with no hit in either arm reads as not reported), the share of
answered requests served from cache is compared per arm;
a difference beyond CACHE_GAP, shown by its interval, makes the night invalid, with a sentence
that says why. Where the protocol does not report them, the latency mixtures are read instead: a
cache answers in a small fraction of a computation's time, so the share of each arm's answers
faster than FAST_FRACTION of the other arm's median is compared the same way (a candidate ten
times slower at its median reads the same and is called invalid, not passed). Both arms' shares
are kept in ab.json either way, with the method that gave them: the check returns ab.json's own
`CacheShares` (`rushhour.reports.ab.document_model`), so its fields are written in one place.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rushhour.reports.ab.document_model import CacheShares
from rushhour.reports.estimate.pairedblocks import newcombe
from rushhour.reports.rundata.attempts import attempted

CACHE_GAP = 0.05
"""Cache-hit shares of the arms may differ by this much (absolute) before the night is invalid."""
CACHE_TAIL = 0.005
"""Each side's error of the cache-share interval (99%)."""
FAST_FRACTION = 0.1
"""An answer faster than this fraction of the other arm's median reads as served from a cache."""
MIN_FAST_SHARE = 0.2
"""The mixture reading needs one arm to answer at least this share that fast."""

__all__ = ["cache_check"]


def _not_read() -> CacheShares:
    return CacheShares(reported=False, method="none", baseline=None, candidate=None, low=None, high=None,
                       confounded=False, sentence="")


def cache_check(requests: pd.DataFrame, first_pair: int = 0) -> CacheShares:
    """Compare the arms' cache-hit shares over the measured pairs (those from `first_pair` on):
    reported by the protocol where it can, else read from the latency mixtures."""
    measured = (requests["trial"].to_numpy(np.int64) // 2 >= first_pair) & attempted(requests)
    answered = measured & requests["ok"].to_numpy(bool)
    arm = requests["arm"].astype(str).to_numpy()
    hits = requests["cached"].fillna(False).to_numpy(bool) if "cached" in requests.columns else np.zeros(len(arm), bool)
    if (answered & hits).any():  # `cached` is False where a protocol does not report it: a hit says it does
        return _compare(hits, answered, arm, "reported")
    latency = requests["latency_ms"].to_numpy(float)
    answered &= ~np.isnan(latency)
    if not all((answered & (arm == a)).any() for a in ("baseline", "candidate")):
        return _not_read()
    medians = {a: float(np.median(latency[answered & (arm == a)])) for a in ("baseline", "candidate")}
    fast = np.where(arm == "baseline", latency < FAST_FRACTION * medians["candidate"],
                    latency < FAST_FRACTION * medians["baseline"])
    check = _compare(fast, answered, arm, "latency mixture")
    biggest = max(check.baseline or 0.0, check.candidate or 0.0)
    if check.confounded and biggest >= MIN_FAST_SHARE:
        return check
    return check.model_copy(update={"confounded": False, "sentence": ""})


def _compare(hits: np.ndarray, answered: np.ndarray, arm: np.ndarray, method: str) -> CacheShares:
    counts = {a: (int((answered & hits & (arm == a)).sum()), int((answered & (arm == a)).sum()))
              for a in ("baseline", "candidate")}
    if min(n for _, n in counts.values()) == 0:
        return _not_read()
    (bh, bn), (ch, cn) = counts["baseline"], counts["candidate"]
    low, high = newcombe(ch, cn, bh, bn, CACHE_TAIL)
    confounded = bool(low > CACHE_GAP or high < -CACHE_GAP)
    sentence = _sentence(bh / bn, ch / cn, method) if confounded else ""
    return CacheShares(reported=method == "reported", method=method, baseline=bh / bn, candidate=ch / cn, low=low,
                       high=high, confounded=confounded, sentence=sentence)


def _sentence(baseline: float, candidate: float, method: str) -> str:
    more, fewer = ("baseline", "candidate") if baseline > candidate else ("candidate", "baseline")
    shares = {"baseline": baseline, "candidate": candidate}
    if method == "reported":
        seen = f"the {more} answered {100 * shares[more]:.0f}% of requests from its cache and the {fewer} " \
               f"{100 * shares[fewer]:.0f}%"
    else:
        seen = (f"the {more} answered {100 * shares[more]:.0f}% of requests in under a tenth of the {fewer}'s median "
                f"time and the {fewer} {100 * shares[fewer]:.0f}%, the mark of answers from a cache (or of versions "
                "ten times apart)")
    return (f"{seen}, so the arms did not do the same work and a ratio would measure the cache, not the versions "
            f"(a long-lived {more} that had seen these texts, or a cache warmed by one arm only); run with fresh "
            "texts (the default: no --seed) or flush both caches first")
