"""Judging each group of the gate population: counts, the two percentiles, ratio, interval, verdict.

Paired: only requests attempted by the current run and by every baseline run are compared, and
the baseline's percentile is the geometric mean of the baseline runs' own percentiles over those
requests (the percentile of per-request medians would sit below every single run's tail, since
each run's slow requests are different ones, and so favour a regression verdict). Unpaired: the
baseline runs' requests are pooled. A group with fewer requests than its percentile needs is
skipped.

The ratio's interval starts as the bootstrap's over requests, which takes requests as
independent. With two or more baseline runs the interval is also made to hold the Student t
prediction interval for one more run (rushhour.reports.gate.runnoise): the runs' own spread, on
K - 1 degrees of freedom, covers run effects, sampling and the requests' dependence in time
together, so the verdict does not rest on the bootstrap's assumption. With one baseline run
the interval is made to hold the spread of the two runs' ratio over time sections instead
(rushhour.reports.gate.sections). The failure share is judged beside it on blocks of time
(rushhour.reports.gate.failshare).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rushhour.reports.estimate.intervals import CONFIDENCE, min_samples
from rushhour.reports.gate.decision import GroupVerdict
from rushhour.reports.gate.failshare import judge_failures
from rushhour.reports.gate.population import (
    MAX_PAIRS,
    GatePopulation,
    block_length,
    log_ratio,
    paired_draws,
    quantiles,
    reference_tail,
    tail,
    unpaired_draws,
)
from rushhour.reports.gate.runnoise import RunNoise, log_tails, run_noise
from rushhour.reports.gate.sections import FEWEST_SECTIONS, Sections, section_half_width
from rushhour.reports.rundata.results import RunData

__all__ = ["group_confidence", "judge_arrays", "judge_groups", "verdict_reason"]


@dataclass(frozen=True)
class _Side:
    """One run's share of one group: values in schedule order (NaN: not attempted, +inf: failed)."""

    latency: np.ndarray

    @property
    def failed(self) -> int:
        return int(np.isposinf(self.latency).sum())

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
    values = [population.values(run.requests) for run in runs]
    sides = {name: [_side(run_values, groups.get(name)) for run_values, groups in zip(values, masks, strict=True)]
             for name in names}
    compared = {name: _compared(sides[name][0], sides[name][1:], paired) for name in names}
    needed = min_samples(population.percentile)
    judged = sum(1 for cur, ref in compared.values() if min(cur.size, ref.size) >= needed)
    confidence = group_confidence(judged)
    return [_verdict(name, sides[name][0], sides[name][1:], *compared[name], paired=paired,
                     percentile=population.percentile, confidence=confidence, min_change=min_change,
                     needed=needed, rng=rng) for name in names]


def judge_arrays(current: np.ndarray, baselines: list[np.ndarray], *, paired: bool, percentile: float,
                 confidence: float, min_change: float, rng: np.random.Generator, name: str = "all") -> GroupVerdict:
    """One group's verdict from arrays in schedule order (NaN: not attempted, +inf: failed), as
    judge_groups reaches it; paired arrays are the same requests row by row."""
    cur, base = _Side(current), [_Side(run) for run in baselines]
    return _verdict(name, cur, base, *_compared(cur, base, paired), paired=paired, percentile=percentile,
                    confidence=confidence, min_change=min_change, needed=min_samples(percentile), rng=rng)


def _side(latency: np.ndarray, mask: np.ndarray | None) -> _Side:
    """A run's share of one group (empty when the run has no request in it)."""
    mask = np.zeros(latency.size, dtype=bool) if mask is None else mask
    return _Side(latency[mask])


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
    noise = run_noise([side.latency for side in base], percentile, paired, rng)
    if noise is not None:
        rows = list(ref_values) if paired else [side.latency for side in base]
        noise = replace(noise, log_tails=log_tails(rows, percentile))
    p_ref, p_cur = reference_tail(ref_values, percentile), tail(cur_values, percentile)
    failures = judge_failures(_failed(cur), [_failed(side) for side in base], alpha=(1.0 - confidence) / 2.0)
    verdict = GroupVerdict(
        group=name, samples_baseline=sum(side.attempted for side in base), samples_current=cur.attempted,
        pairs=int(cur_values.size) if paired else None, failed_baseline=sum(side.failed for side in base),
        failed_current=cur.failed, p_baseline_ms=p_ref, p_current_ms=p_cur, ratio=None, ci=None,
        noise_band=noise.band(confidence) if noise else None, threshold=1.0 + min_change, regression=False,
        run_noise_sd=noise.tau if noise else None, failure_share_baseline=failures.baseline,
        failure_share_current=failures.current, failure_p_value=failures.p_value,
        failure_regression=failures.regression, noise_df=noise.degrees_of_freedom if noise else None,
        failure_method=failures.method, failure_design_effect=failures.design_effect,
        failure_effective_current=failures.effective_current)
    usable = min(cur_values.size, ref_values.shape[-1])
    if usable < needed or p_ref is None or p_cur is None:
        return replace(verdict, skipped=f"skipped: {usable} < {needed} requests", failure_regression=False)
    if np.isinf(p_ref) and np.isinf(p_cur):
        return replace(verdict, regression=failures.regression, note=(
            f"P{percentile:g} is a failure in both runs (more than {100 - percentile:g}% failed); "
            "judged on the failure share only."))
    draws = (paired_draws if paired else unpaired_draws)(ref_values, cur_values, percentile, rng)
    interval = _with_run_noise(quantiles(draws, confidence), p_cur, noise, confidence)
    ratio = float(np.exp(log_ratio(p_cur, p_ref)))
    sections = None
    if len(base) == 1:
        sections = section_half_width(cur_values, ref_values.reshape(-1), percentile, confidence)
        interval = _stretched(interval, float(np.log(ratio)), None if sections is None else sections.half_width)
    latency = bool(ratio >= verdict.threshold and interval[0] > 1.0)
    return replace(verdict, ratio=ratio, ci=interval, latency_regression=latency,
                   regression=latency or failures.regression, method=_method(paired, noise, sections),
                   bootstrap_blocks=_blocks(cur_values.size) if paired else None)


def _blocks(n: int) -> int:
    """Blocks of consecutive requests the paired bootstrap resamples (after thinning)."""
    used = min(n, MAX_PAIRS)
    return -(-used // block_length(used))


def _failed(side: _Side) -> np.ndarray:
    """The side's attempted requests in time order, True where one failed."""
    return np.isposinf(side.latency[~np.isnan(side.latency)])


def _with_run_noise(boot: tuple[float, float], p_cur: float, noise: RunNoise | None,
                    confidence: float) -> tuple[float, float]:
    """The bootstrap interval, stretched to hold the t prediction interval of the baseline runs."""
    half = noise.half_width(confidence) if noise is not None else None
    if half is None or noise is None or not np.isfinite(p_cur):
        return boot
    centre = float(np.log(max(p_cur, 1e-9))) - float(np.mean(noise.log_tails))
    return min(boot[0], float(np.exp(centre - half))), max(boot[1], float(np.exp(centre + half)))


def _stretched(boot: tuple[float, float], centre: float, half: float | None) -> tuple[float, float]:
    """The bootstrap interval, stretched to hold centre +- half on the log scale (None: as is)."""
    if half is None or not np.isfinite(centre):
        return boot
    return min(boot[0], float(np.exp(centre - half))), max(boot[1], float(np.exp(centre + half)))


def _method(paired: bool, noise: RunNoise | None, sections: Sections | None = None) -> str:
    head = "paired bootstrap over requests" if paired else "bootstrap of each run"
    if sections is not None:
        return head + (f"; one baseline run: held to Student t on {sections.sections - 1} degrees of freedom from "
                       f"the spread of the two runs' ratio over {sections.sections} time sections; run-to-run "
                       "noise needs 2 or more baseline runs")
    if noise is None or noise.half_width(0.95) is None:
        return head + (" (requests taken as independent); one baseline run too short for "
                       f"{FEWEST_SECTIONS} time sections with a request past the percentile in each: dependence "
                       "and run-to-run noise not modelled")
    return head + f"; held to Student t on {noise.degrees_of_freedom} degree(s) of freedom from {noise.runs} baseline runs"


def verdict_reason(groups: list[GroupVerdict], percentile: float, regressed: bool) -> str:
    """One sentence: which groups regressed and how, or why the largest change is not a regression."""
    label = f"P{percentile:g}"
    if regressed:
        hits = [_latency_hit(g, label) for g in groups if g.latency_regression]
        hits += [_failure_hit(g) for g in groups if g.failure_regression]
        return "; ".join(hits) + ": a regression beyond noise."
    worst = max(groups, key=lambda g: g.ratio or 0.0)
    if worst.ratio is None or worst.ci is None:
        return "no group's percentile could be compared, and no failure share rose significantly; no regression."
    head = (f"largest change {worst.group} {label} {_ms(worst.p_baseline_ms)} -> {_ms(worst.p_current_ms)} "
            f"(x{worst.ratio:.3f}, interval [{worst.ci[0]:.3f}, {worst.ci[1]:.3f}])")
    if worst.ratio < worst.threshold:
        return f"{head} is below its x{worst.threshold:.3f} threshold; no regression."
    return f"{head} reaches its threshold but the interval includes no change; within noise, no regression."


def _latency_hit(g: GroupVerdict, label: str) -> str:
    interval = f"[{g.ci[0]:.3f}, {g.ci[1]:.3f}]" if g.ci else "—"
    return (f"{g.group} {label} {_ms(g.p_baseline_ms)} -> {_ms(g.p_current_ms)} "
            f"(x{g.ratio or 0.0:.3f}, interval {interval}, threshold x{g.threshold:.3f})")


def _failure_hit(g: GroupVerdict) -> str:
    return (f"{g.group} failure share {100 * (g.failure_share_baseline or 0.0):.2f}% -> "
            f"{100 * (g.failure_share_current or 0.0):.2f}% (one-sided p = {g.failure_p_value or 0.0:.2g})")


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return "a failure" if value == float("inf") else f"{value:,.1f} ms"
