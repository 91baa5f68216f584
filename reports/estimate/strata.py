"""How much independent evidence a run whose load changes holds: batch means within each stretch.

A drill's load is not one steady state: traffic ramps up to a peak and back, a fault slows the
service for a minute. The whole run's percentile is still one figure, but one batch-means basis
over the whole run (`blocks.dependence`) counts the step from a calm stretch to the peak as
noise: its block means follow the load, their spread and their lag-1 correlation grow with it,
and the interval comes out wide or is declined ("the run is too short for its memory") when the
run knows exactly where its load changed.

Here the series is cut at those known edges (the traffic model's phases, the fault windows)
into stretches, each a stratum: the figure stays the whole run's, a mean over every request,
but its variance is the sum of each stretch's own, weighted by its share of requests squared
(stratified sampling). Within a stretch its straight-line trend is taken out first (a ramp's
rising load is not noise either), and `blocks.dependence` measures what is left, on at least
`STRETCH_BLOCKS` blocks, bounded by the latency ranks' dependence in the same stretch where the
caller has them, and by that of the stretch's slowest tenth (a stretch's few late requests
cannot measure it alone, and its ranks mostly show its calm). A stretch whose
requests stay correlated across its longest blocks counts as no more than `STRETCH_BLOCKS`
independent ones: its memory is longer than the blocks can show, so it is charged as long as
the stretch allows. The run as a whole outlasts its blocks only when every stretch does.
docs/concepts/confidence.md shows the bench: a promo-day peak (M/D/1 load 0.5 to 0.9 and back)
and a fault window of slow service, where one basis over the whole run declines every interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from rushhour.reports.estimate.blocks import Dependence, _few_blocks_charge, dependence, least_effective

__all__ = ["METHOD", "STRETCH_BLOCKS", "stratified_dependence", "stretch_labels"]

METHOD = "batch means within stretches of steady load (phases, fault windows), combined"
"""The method named beside an interval whose run was cut at its phases and fault windows."""
TOP_SHARE = 0.1
"""The slowest share of a stretch's requests whose dependence also bounds the stretch's."""
STRETCH_BLOCKS = 10
"""Fewest blocks a stretch's block length may leave. Fewer than the whole run's 30, since a
stretch is shorter; the few blocks' uncertainty is charged on their degrees of freedom."""


def stretch_labels(times: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    """The stretch of each time: how many of `edges` (any order, duplicates ignored) lie at or
    before it. Requests between the same two edges share a label."""
    return np.searchsorted(np.unique(np.asarray(edges, dtype=float)), times, side="right")


def stratified_dependence(series: np.ndarray, labels: np.ndarray, confidence: float = 0.95,
                          min_blocks: int = STRETCH_BLOCKS, levels: np.ndarray | None = None) -> Dependence:
    """The effective sample size of the mean of `series` (time order) when its load changes at
    the label changes of `labels` (same order); a run of one stretch is `blocks.dependence`.
    `levels` (same order; latency ranks), when given, also bound each stretch's dependence: a
    stretch's few late requests cannot measure it alone."""
    n = int(series.size)
    spans = _spans(labels, 2 * min_blocks)
    variance = float(series.var()) if n else 0.0
    if len(spans) < 2 or variance <= 0.0:
        whole = dependence(series, confidence)
        return whole if levels is None else least_effective(whole, dependence(levels, confidence))
    stretches = [_detrended(series[start:end]) for start, end in spans]
    seen = [_charged(_stretch(stretch, None if levels is None else levels[start:end], confidence, min_blocks),
                     min_blocks, confidence) for stretch, (start, end) in zip(stretches, spans)]
    total = sum((one.samples / n) ** 2 * float(stretch.var()) / one.effective
                for one, stretch in zip(seen, stretches) if one.effective > 0)
    design = max(total * n / variance, 1.0)
    worst = max(seen, key=lambda one: one.design_effect)
    return Dependence(METHOD, worst.block_len, sum(one.blocks for one in seen), worst.lag1, n,
                      n / design, all(one.outlasts_blocks for one in seen))


def _charged(seen: Dependence, min_blocks: int, confidence: float) -> Dependence:
    """A stretch that stays correlated across its longest blocks counts as no more than
    `min_blocks` independent requests (less the few blocks' charge): its memory is longer than
    a tenth of it, so the blocks cannot say how much longer."""
    if not seen.outlasts_blocks:
        return seen
    return replace(seen, effective=min(seen.effective, min_blocks * _few_blocks_charge(min_blocks, confidence)))


def _stretch(stretch: np.ndarray, levels: np.ndarray | None, confidence: float, min_blocks: int) -> Dependence:
    """One stretch's dependence, the most cautious of its series', its levels' and its slowest
    tenth's (`TOP_SHARE`): a calm stretch's rare late requests may miss the queue's busy
    periods, its levels mostly show the calm, and the requests above the stretch's own ninetieth
    percentile show how long a busy period lasts."""
    seen = dependence(stretch, confidence, min_blocks)
    if levels is None:
        return seen
    top = (levels > np.quantile(levels, 1.0 - TOP_SHARE)).astype(float)
    return least_effective(seen, dependence(_detrended(levels), confidence, min_blocks),
                           dependence(_detrended(top), confidence, min_blocks))


def _detrended(stretch: np.ndarray) -> np.ndarray:
    """The stretch less its straight-line trend over time: a ramp's load is not noise."""
    index = np.arange(stretch.size, dtype=float)
    return stretch - np.polyval(np.polyfit(index, stretch, 1), index)


def _spans(labels: np.ndarray, shortest: int) -> list[tuple[int, int]]:
    """(start, end) of each run of equal labels, in order; a run shorter than `shortest` joins
    the one before it (the first, the one after)."""
    cuts = (np.flatnonzero(labels[1:] != labels[:-1]) + 1).tolist() if labels.size else []
    edges = [0, *cuts, int(labels.size)]
    spans: list[tuple[int, int]] = []
    for start, end in zip(edges[:-1], edges[1:]):
        if spans and (end - start < shortest or spans[-1][1] - spans[-1][0] < shortest):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans
