"""Judging each group of the gate population: counts, the two percentiles, ratio, interval, verdict.

Paired: only requests attempted by the current run and by every baseline run are compared, and
the baseline's percentile is the median of the baseline runs' own percentiles over those requests
(the percentile of per-request medians would sit below every single run's tail, since each run's
slow requests are different ones, and so favour a regression verdict). Unpaired: the baseline
runs' requests are pooled. A group with fewer requests than its percentile needs is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from reports.decision import GroupVerdict
from reports.gate import GatePopulation, noise_band, paired_interval, reference_tail, tail, unpaired_interval
from reports.results import RunData
from reports.stats import CONFIDENCE, min_samples

__all__ = ["group_confidence", "judge_groups", "verdict_reason"]


@dataclass(frozen=True)
class _Side:
    """One run's share of one group: latencies in schedule order (NaN: not attempted), failures."""

    latency: np.ndarray
    failed: int

    @property
    def attempted(self) -> int:
        return int((~np.isnan(self.latency)).sum())


def group_confidence(judged: int) -> float:
    """Per-group interval confidence, Bonferroni-adjusted so the whole gate keeps CONFIDENCE."""
    return 1.0 - (1.0 - CONFIDENCE) / max(1, judged)


def judge_groups(baselines: list[RunData], current: RunData, *, paired: bool, population: GatePopulation,
                 min_change: float, rng: np.random.Generator) -> list[GroupVerdict]:
    """One GroupVerdict per group found in any run, in name order."""
    runs = [current, *baselines]
    masks = [population.groups(run.requests) for run in runs]
    names = sorted(set().union(*masks))
    latencies = [(population.values(run.requests), run.requests["ok"].to_numpy()) for run in runs]
    sides = {name: [_side(*values, groups.get(name)) for values, groups in zip(latencies, masks)]
             for name in names}
    compared = {name: _compared(sides[name][0], sides[name][1:], paired) for name in names}
    needed = min_samples(population.percentile)
    judged = sum(1 for cur, ref in compared.values() if min(cur.size, ref.size) >= needed)
    confidence = group_confidence(judged)
    return [_verdict(name, sides[name][0], sides[name][1:], *compared[name], paired=paired,
                     percentile=population.percentile, confidence=confidence, min_change=min_change,
                     needed=needed, rng=rng) for name in names]


def _side(latency: np.ndarray, ok: np.ndarray, mask: np.ndarray | None) -> _Side:
    """A run's share of one group (empty when the run has no request in it)."""
    mask = np.zeros(latency.size, dtype=bool) if mask is None else mask
    return _Side(latency[mask], int((~np.isnan(latency[mask]) & ~ok[mask]).sum()))


def _compared(cur: _Side, base: list[_Side], paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """(current values, baseline values) the ratio is computed on, NaN-free.

    Paired: baseline values are a (runs x requests) matrix over the requests every run attempted.
    """
    if paired:
        stack = np.vstack([side.latency for side in base])
        keep = ~np.isnan(cur.latency) & ~np.isnan(stack).any(axis=0)
        return cur.latency[keep], stack[:, keep]
    pooled = np.concatenate([side.latency for side in base])
    return cur.latency[~np.isnan(cur.latency)], pooled[~np.isnan(pooled)]


def _verdict(name: str, cur: _Side, base: list[_Side], cur_values: np.ndarray, ref_values: np.ndarray, *,
             paired: bool, percentile: float, confidence: float, min_change: float, needed: int,
             rng: np.random.Generator) -> GroupVerdict:
    band = noise_band([side.latency for side in base], percentile, paired)
    p_ref, p_cur = reference_tail(ref_values, percentile), tail(cur_values, percentile)
    verdict = GroupVerdict(
        group=name, samples_baseline=sum(side.attempted for side in base), samples_current=cur.attempted,
        pairs=int(cur_values.size) if paired else None, failed_baseline=sum(side.failed for side in base),
        failed_current=cur.failed, p_baseline_ms=p_ref, p_current_ms=p_cur, ratio=None, ci=None,
        noise_band=band, threshold=max(1.0 + min_change, band or 1.0), regression=False)
    usable = min(cur_values.size, ref_values.shape[-1])
    if usable < needed or p_ref is None or p_cur is None:
        return replace(verdict, skipped=f"skipped: {usable} < {needed} requests")
    interval = (paired_interval if paired else unpaired_interval)(ref_values, cur_values, percentile,
                                                                   confidence, rng)
    ratio = p_cur / max(p_ref, 1e-9)
    return replace(verdict, ratio=ratio, ci=interval,
                    regression=bool(ratio >= verdict.threshold and interval[0] > 1.0))


def verdict_reason(groups: list[GroupVerdict], percentile: float, regressed: bool) -> str:
    """One sentence: which groups regressed, or why the largest change is not a regression."""
    label = f"P{percentile:g}"
    if regressed:
        hits = [g for g in groups if g.regression]
        return "; ".join(f"{g.group} {label} {_ms(g.p_baseline_ms)} -> {_ms(g.p_current_ms)} ms "
                         f"(x{g.ratio:.3f}, interval [{g.ci[0]:.3f}, {g.ci[1]:.3f}], threshold "
                         f"x{g.threshold:.3f})" for g in hits if g.ratio is not None and g.ci is not None
                         ) + ": a regression beyond noise."
    worst = max(groups, key=lambda g: g.ratio or 0.0)
    if worst.ratio is None or worst.ci is None:
        return "no group could be judged."
    head = (f"largest change {worst.group} {label} {_ms(worst.p_baseline_ms)} -> {_ms(worst.p_current_ms)} ms "
            f"(x{worst.ratio:.3f}, interval [{worst.ci[0]:.3f}, {worst.ci[1]:.3f}])")
    if worst.ratio < worst.threshold:
        return f"{head} is below its x{worst.threshold:.3f} threshold; no regression."
    return f"{head} reaches its threshold but the interval includes no change; within noise, no regression."


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"
