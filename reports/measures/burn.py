"""Multi-window burn rates (Google SRE workbook): would this run have paged someone?

A burn rate is the bad share in a window divided by the allowed bad share. The page rules pair a
long window with a short one (1h/5m at 14.4x, 6h/30m at 6x); both must have traffic and both
must exceed the threshold at the same moment, so a long window still carrying an old burst
cannot page on its own while the short window is empty (the alert would have resolved). A drill
compresses time, so the windows shrink by the scenario's time_scale (model seconds replayed per run
second).

Windows are clipped to the run: a rule is looked at only where its long window lies wholly inside
the run (from its start to its end), so a few bad requests at the start cannot page through a
window that holds seconds of traffic and calls itself an hour. A run shorter than a rule's long
window is not evaluated on that rule (`evaluated` False, with the reason); it never pages.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar

import numpy as np
from pydantic import ConfigDict

PAGE_RULES = ((3600.0, 300.0, 14.4), (21600.0, 1800.0, 6.0))
BINS_PER_SHORT_WINDOW = 10
MAX_BINS = 200_000


@dataclass(frozen=True)
class BurnRule:
    """One long/short window pair with its result over the run; summary.json's `burn_rates` rows
    are validated against these fields (a misspelt key is refused)."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    long_window_s: float
    short_window_s: float
    threshold: float
    worst_long: float | None
    worst_short: float | None
    worst_both: float | None
    pages: bool
    first_page_s: float | None
    evaluated: bool = True
    note: str | None = None

    def as_dict(self) -> dict[str, float | bool | None]:
        return asdict(self)


def burn_rates(times: np.ndarray, valid: np.ndarray, bad: np.ndarray, allowed: float,
               duration_s: float, time_scale: float) -> list[BurnRule]:
    """Evaluate every page rule over the run, windows scaled into run time."""
    return [
        _rule(times, valid, bad, allowed, duration_s, long_s / time_scale, short_s / time_scale,
              threshold)
        for long_s, short_s, threshold in PAGE_RULES
    ]


def _rule(times: np.ndarray, valid: np.ndarray, bad: np.ndarray, allowed: float,
          duration_s: float, long_s: float, short_s: float, threshold: float) -> BurnRule:
    width = max(short_s / BINS_PER_SHORT_WINDOW, duration_s / MAX_BINS, 1e-6)
    long_bins, short_bins = max(1, round(long_s / width)), max(1, round(short_s / width))
    n_bins = int(np.floor(duration_s / width + 1e-9))  # whole bins inside the run only
    if n_bins < long_bins:
        return BurnRule(long_window_s=long_s, short_window_s=short_s, threshold=threshold, worst_long=None,
                        worst_short=None, worst_both=None, pages=False, first_page_s=None, evaluated=False,
                        note=f"not evaluated: the run ({duration_s:.4g} s) is shorter than the long "
                             f"window ({long_s:.4g} s), and a partial window never pages")
    inside = valid & (times >= 0) & (times < n_bins * width)
    index = (times[inside] // width).astype(np.int64)
    valid_counts = np.bincount(index, minlength=n_bins)
    bad_counts = np.bincount(index, weights=bad[inside].astype(float), minlength=n_bins)
    long_rate = _window_rate(valid_counts, bad_counts, long_bins, allowed)[long_bins - 1:]
    short_rate = _window_rate(valid_counts, bad_counts, short_bins, allowed)[long_bins - 1:]
    both = np.where(np.isnan(long_rate) | np.isnan(short_rate), np.nan, np.minimum(long_rate, short_rate))
    paging = np.flatnonzero(np.nan_to_num(both, nan=-np.inf) >= threshold)
    return BurnRule(
        long_window_s=long_s, short_window_s=short_s, threshold=threshold,
        worst_long=_nanmax(long_rate), worst_short=_nanmax(short_rate), worst_both=_nanmax(both),
        pages=bool(paging.size),
        first_page_s=float((paging[0] + long_bins) * width) if paging.size else None,
    )


def _window_rate(valid_counts: np.ndarray, bad_counts: np.ndarray, window: int,
                 allowed: float) -> np.ndarray:
    """Trailing-window burn rate at the end of every bin (the caller drops the partial windows
    at the start)."""
    valid_sum = _trailing_sum(valid_counts.astype(float), window)
    bad_sum = _trailing_sum(bad_counts, window)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(valid_sum > 0, bad_sum / valid_sum / allowed, np.nan)


def _trailing_sum(counts: np.ndarray, window: int) -> np.ndarray:
    total = np.concatenate(([0.0], np.cumsum(counts)))
    ends = np.arange(1, counts.size + 1)
    return total[ends] - total[np.maximum(ends - window, 0)]


def _nanmax(values: np.ndarray) -> float | None:
    finite = values[~np.isnan(values)]
    return float(finite.max()) if finite.size else None
