"""Bounded-memory tallies for a running drill: log-bucket histograms and a ring of time bins.

A drill's live numbers (the progress line, the stop conditions, the terminal view, the SLO burn
rates) must not keep one entry per request, or a soak's harness grows with its length. These two
structures keep a fixed amount whatever the request count:

- `LogHistogram`: buckets whose bounds grow by a constant factor, so a percentile read from it
  is within a stated relative error `alpha` of the exact nearest-rank value (as DDSketch does):
  the exact value lies in the bucket found, and the bucket's middle is within `alpha` of any value
  in it. Values at or below `lo` share the first bucket (absolute error at most `lo`); values above
  `hi` share the last and read as `hi`.
- `TimeRing`: sums per time bin over the last `span_s`, so "what ended in the last 10 s" is a sum
  of a few bins instead of a scan of every request. A window's edges are resolved to one bin.
"""

from __future__ import annotations

import math

import numpy as np

from rushhour.kernel.quantiles import nearest_rank

DEFAULT_ALPHA = 0.01


class LogHistogram:
    """Counts in log-spaced buckets, one histogram per cell of `shape` (e.g. one per priority)."""

    def __init__(self, *, alpha: float = DEFAULT_ALPHA, lo: float = 1e-6, hi: float = 1e5,
                 shape: tuple[int, ...] = ()) -> None:
        if not 0 < alpha < 1 or not 0 < lo < hi:
            raise ValueError(f"A log histogram needs 0 < alpha < 1 and 0 < lo < hi, got alpha={alpha!r}, "
                             f"lo={lo!r}, hi={hi!r}.")
        self.alpha, self.lo, self.hi = alpha, lo, hi
        self._gamma = (1 + alpha) / (1 - alpha)
        self.size = math.ceil(math.log(hi / lo) / math.log(self._gamma)) + 2
        self.counts = np.zeros((*shape, self.size), dtype=np.int64)
        self.low = math.inf
        self.high = -math.inf

    def index(self, values: np.ndarray) -> np.ndarray:
        """The bucket of each (finite, non-negative) value."""
        with np.errstate(divide="ignore"):
            raw = np.ceil(np.log(np.maximum(values, self.lo) / self.lo) / math.log(self._gamma))
        return np.where(values > self.hi, self.size - 1, np.clip(raw, 0, self.size - 2)).astype(np.int64)

    def observe(self, values: np.ndarray, cell: tuple[np.ndarray, ...] = ()) -> None:
        """Add values (NaN skipped, negatives counted as 0) to the cells given by index arrays."""
        values = np.asarray(values, dtype=np.float64)
        keep = ~np.isnan(values)
        values = np.maximum(values[keep], 0.0)
        if not values.size:
            return
        np.add.at(self.counts, (*(c[keep] for c in cell), self.index(values)), 1)
        self.low, self.high = min(self.low, float(values.min())), max(self.high, float(values.max()))

    def value(self, index: int) -> float:
        """The value a bucket stands for: its middle (relative error at most alpha)."""
        if index <= 0:
            return self.lo
        if index >= self.size - 1:
            return self.hi
        return 2.0 * self.lo * self._gamma ** index / (self._gamma + 1.0)

    def percentile(self, percentile: float, counts: np.ndarray | None = None) -> float:
        """The nearest-rank percentile of the counts (the whole histogram by default); NaN when empty.

        Of the whole histogram it is also kept within the smallest and largest value seen."""
        whole = counts is None
        counts = self.counts.reshape(-1, self.size).sum(axis=0) if counts is None else counts
        total = int(counts.sum())
        if total == 0:
            return float("nan")
        found = int(np.searchsorted(np.cumsum(counts), nearest_rank(percentile, total)))
        estimate = self.value(found)
        return min(max(estimate, self.low), self.high) if whole else estimate

    @property
    def count(self) -> int:
        return int(self.counts.sum())


class TimeRing:
    """Sums of `shape` cells per time bin of `bin_s`, for the bins of the last `span_s` seen.

    Bin k holds times in ((k-1) bin_s, k bin_s]; a time older than the ring's span (counted from
    the newest bin seen) is dropped, as is a bin whose slot a newer bin has taken."""

    def __init__(self, *, bin_s: float, span_s: float, shape: tuple[int, ...] = ()) -> None:
        if not bin_s > 0 or not span_s >= bin_s:
            raise ValueError(f"A time ring needs bin_s > 0 and span_s >= bin_s, got bin_s={bin_s!r}, span_s={span_s!r}.")
        self.bin_s = bin_s
        self.slots = math.ceil(span_s / bin_s) + 1
        self.ids = np.full(self.slots, -(2**62), dtype=np.int64)
        self.sums = np.zeros((self.slots, *shape), dtype=np.float64)

    @property
    def span_s(self) -> float:
        return (self.slots - 1) * self.bin_s

    def add(self, times: np.ndarray, cell: tuple[np.ndarray, ...] = (), weights: np.ndarray | None = None) -> None:
        """Add `weights` (1 each by default) at these times into the cells given by index arrays."""
        times = np.asarray(times, dtype=np.float64)
        keep = np.isfinite(times)
        if not keep.any():
            return
        bins = np.ceil(times[keep] / self.bin_s).astype(np.int64)
        newest = max(int(bins.max()), int(self.ids.max()))
        keep[keep] = bins > newest - self.slots
        bins = np.ceil(times[keep] / self.bin_s).astype(np.int64)
        fresh = np.unique(bins)
        slot = fresh % self.slots
        stale = self.ids[slot] < fresh
        self.sums[slot[stale]] = 0.0
        self.ids[slot[stale]] = fresh[stale]
        current = self.ids[bins % self.slots] == bins
        weight = np.ones(bins.size) if weights is None else np.asarray(weights, dtype=np.float64)[keep]
        index = (bins[current] % self.slots, *(c[keep][current] for c in cell))
        np.add.at(self.sums, index, weight[current])

    def window(self, now_s: float, window_s: float) -> np.ndarray:
        """The cells summed over the bins in (now - window, now], the window cut to the ring's span."""
        last = math.ceil(now_s / self.bin_s)
        first = math.ceil((now_s - min(window_s, self.span_s)) / self.bin_s)
        inside = (self.ids > first) & (self.ids <= last)
        return np.asarray(self.sums[inside].sum(axis=0))
