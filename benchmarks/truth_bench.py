"""Benchmark: how often each drill SLO interval covers the truth, on processes built to break it.

For every process of `benchmarks.truth_processes` (queues near the knee started empty or
stationary, a wandering machine speed, a cold cache, failures in bursts, and an independent
control) it simulates `--reps` drills of `--requests` requests and judges each drill statement:

- "P99 95%" / "P95 95%": the percentile interval of a latency SLO
  (`rushhour.reports.estimate.series.quantile_interval`);
- "late share 95%": the interval of the share of requests over a threshold set where the true
  late share is 1.03% (what a latency SLO's good share and budget rest on);
- "failed share 95%": the interval of the failed share, true 1.02% (availability SLOs).

The truth of a queue process is the same quantity over `--truth-reps` further drills pooled:
for a run started empty that is the run's own expected mixture, which is what a drill of that
length measures. A statement's error is the share of drills whose interval missed the truth,
with its Monte Carlo (Clopper-Pearson 95%) interval; "too low" misses are the dangerous ones (a
latency interval wholly under the truth). "declined" is the share of drills the core answered
"not enough independent data" (no upper bound), and "width / spread" the median interval width
over 2 x 1.96 x the point estimate's own standard deviation across drills: about 1 is right, far
above 1 is an interval that never commits. The same drills judged by the old independent-request
intervals (`rushhour.reports.estimate.intervals`, Clopper-Pearson on n) show what dependence costs;
`--bootstrap` adds a moving-block bootstrap of each percentile on the block length batch means
chose (`benchmarks.truth_bootstrap`), the alternative the core was chosen against.

Usage: python -m benchmarks.truth_bench [--reps 400] [--requests 10000] [--truth-reps 2000]
       [--only NAME] [--bootstrap] [--out docs/data/truth_bench.json [--update]]
       (prints the markdown table; --update keeps the rows of the processes not run)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import click
import numpy as np
from scipy import special, stats

from benchmarks import truth_processes as tp
from benchmarks.truth_bootstrap import moving_block_interval
from rushhour.reports.estimate.intervals import CONFIDENCE, percentile_of
from rushhour.reports.estimate.series import quantile_interval, share_interval

LATE_SHARE = 0.0103
"""The true late share the late-share statement is judged at: just above a 1% allowance."""
Simulate = Callable[[np.random.Generator, int, int], np.ndarray]

PROCESSES: dict[str, tuple[str, Simulate]] = {
    "independent": ("latency", tp.independent),
    "M/D/1 0.5 stationary": ("latency", lambda g, r, n: tp.md1(g, r, n, 0.5, stationary=True)),
    "M/D/1 0.7 empty": ("latency", lambda g, r, n: tp.md1(g, r, n, 0.7, stationary=False)),
    "M/D/1 0.9 stationary": ("latency", lambda g, r, n: tp.md1(g, r, n, 0.9, stationary=True)),
    "M/D/1 0.9 empty": ("latency", lambda g, r, n: tp.md1(g, r, n, 0.9, stationary=False)),
    "M/D/1 0.95 stationary": ("latency", lambda g, r, n: tp.md1(g, r, n, 0.95, stationary=True)),
    "M/D/4 0.9 stationary": ("latency", lambda g, r, n: tp.mdc(g, r, n, 0.9, 4, stationary=True)),
    "M/D/4 0.95 empty": ("latency", lambda g, r, n: tp.mdc(g, r, n, 0.95, 4, stationary=False)),
    "speed wandering 5%, M/D/1 0.85": ("latency", lambda g, r, n: tp.wandering(g, r, n, 0.85, 0.05)),
    "speed wandering 10%, M/D/1 0.8": ("latency", lambda g, r, n: tp.wandering(g, r, n, 0.8, 0.10)),
    "cold cache, M/D/1 0.7 empty": ("latency", lambda g, r, n: tp.cold_cache(g, r, n, 0.7)),
    "failures in bursts": ("failures", lambda g, r, n: tp.bursts(g, r, n)),
    "promo peak, M/D/1 0.5 → 0.9 → 0.5": ("latency", lambda g, r, n: tp.md1_peak(g, r, n)),
    "fault window, M/D/1 0.6, 1.5x slower inside": ("latency", lambda g, r, n: tp.fault_window(g, r, n)),
}
STRATA: dict[str, Callable[[int], np.ndarray]] = {
    "promo peak, M/D/1 0.5 → 0.9 → 0.5": tp.peak_labels,
    "fault window, M/D/1 0.6, 1.5x slower inside": tp.fault_labels,
}
"""The stretches a drill of these processes knows (its phases, its fault window): their drills
are also judged with the dependence measured within each stretch."""
STRATIFIED = "batch means within stretches"


@dataclass(frozen=True)
class Outcome:
    """One statement under one process: coverage and the ways it missed, against nominal."""

    process: str
    statement: str
    method: str
    reps: int
    nominal_error: float
    error: float
    error_low: float
    error_high: float
    too_low: float
    too_high: float
    declined: float
    width_over_spread: float | None
    effective_median: float | None
    passes: bool


def judge(process: str, statement: str, method: str, truth: float, points: np.ndarray,
          lows: np.ndarray, highs: np.ndarray, declined: np.ndarray,
          effective: np.ndarray | None = None) -> Outcome:
    """Score intervals [lows, highs] (NaN = unbounded) of `points` against `truth`."""
    reps = int(points.size)
    too_low = np.nan_to_num(highs, nan=np.inf) < truth
    too_high = np.nan_to_num(lows, nan=-np.inf) > truth
    misses = int((too_low | too_high).sum())
    nominal = 1.0 - CONFIDENCE
    spread = 2.0 * float(special.ndtri(0.5 + CONFIDENCE / 2)) * float(np.std(points, ddof=1))
    committed = ~np.isnan(lows) & ~np.isnan(highs)
    width = float(np.median(highs[committed] - lows[committed]) / spread) if committed.any() and spread > 0 else None
    bounds = stats.binomtest(misses, reps).proportion_ci(0.95)
    # a statement fails when its error is above nominal beyond Monte Carlo chance (one-sided, 0.1%)
    passes = bool(stats.binom.sf(misses - 1, reps, nominal) >= 0.001)
    return Outcome(process, statement, method, reps, nominal, misses / reps, float(bounds.low),
                   float(bounds.high), float(too_low.mean()), float(too_high.mean()),
                   float(declined.mean()), width,
                   float(np.median(effective)) if effective is not None else None, passes)


def _percentile_rows(process: str, drills: np.ndarray, pooled: np.ndarray,
                     percentile: float, bootstrap: bool = False) -> list[Outcome]:
    truth = float(np.quantile(pooled, percentile / 100.0))
    new = [quantile_interval(row, percentile) for row in drills]
    strata = STRATA[process](drills.shape[1]) if process in STRATA else None
    cut = [] if strata is None else [quantile_interval(row, percentile, strata=strata) for row in drills]
    old = [percentile_of(row, percentile) for row in drills]
    label = f"P{percentile:g} {CONFIDENCE:.0%}"

    def arr(values: list[float | None]) -> np.ndarray:
        return np.array([np.nan if v is None else v for v in values], dtype=float)

    rows = [
        judge(process, label, "batch means", truth, arr([r.value for r in new]), arr([r.low for r in new]),
              arr([r.high for r in new]), np.array([not r.enough for r in new]),
              np.array([r.dependence.effective for r in new])),
        judge(process, label, "independent (old)", truth, arr([r.value for r in old]),
              arr([r.ci_low for r in old]), arr([r.ci_high for r in old]), np.array([not r.trusted for r in old])),
    ]
    if cut:
        rows.insert(1, judge(process, label, STRATIFIED, truth, arr([r.value for r in cut]),
                             arr([r.low for r in cut]), arr([r.high for r in cut]),
                             np.array([not r.enough for r in cut]), np.array([r.dependence.effective for r in cut])))
    if bootstrap:
        rng = np.random.default_rng(int(percentile * 100))
        bounds = np.array([moving_block_interval(row, percentile, r.dependence.block_len, rng)
                           for row, r in zip(drills, new)])
        rows.append(judge(process, label, "moving-block bootstrap", truth, arr([r.value for r in new]),
                          bounds[:, 0], bounds[:, 1], np.zeros(len(new), dtype=bool)))
    return rows


def _share_rows(process: str, statement: str, flags: np.ndarray, truth: float,
                levels: np.ndarray | None = None) -> list[Outcome]:
    new = [share_interval(row, levels=None if levels is None else levels[i]) for i, row in enumerate(flags)]
    points = flags.mean(axis=1)
    strata = STRATA[process](flags.shape[1]) if process in STRATA else None
    cut = [] if strata is None else [share_interval(row, levels=None if levels is None else levels[i], strata=strata)
                                     for i, row in enumerate(flags)]
    n = flags.shape[1]
    hits = flags.sum(axis=1)
    tail = (1.0 - CONFIDENCE) / 2.0
    old_low = np.where(hits > 0, special.betaincinv(np.maximum(hits, 1e-9), n - hits + 1, tail), 0.0)
    old_high = np.where(hits < n, special.betaincinv(hits + 1, np.maximum(n - hits, 1e-9), 1 - tail), 1.0)
    nobody = np.zeros(points.size, dtype=bool)
    stratified = [judge(process, statement, STRATIFIED, truth, points, np.array([r.low for r in cut], dtype=float),
                        np.array([r.high for r in cut], dtype=float), np.array([not r.enough for r in cut]),
                        np.array([r.dependence.effective for r in cut]))] if cut else []
    return [*stratified,
        judge(process, statement, "batch means", truth, points, np.array([r.low for r in new], dtype=float),
              np.array([r.high for r in new], dtype=float), np.array([not r.enough for r in new]),
              np.array([r.dependence.effective for r in new])),
        judge(process, statement, "independent (old)", truth, points, old_low, old_high, nobody),
    ]


def run_process(name: str, reps: int, requests: int, truth_reps: int, seed: int,
                percentiles: tuple[float, ...] = (99.0, 95.0), bootstrap: bool = False) -> list[Outcome]:
    """Every statement of one process: `reps` drills judged against `truth_reps` pooled ones."""
    kind, simulate = PROCESSES[name]
    rng = np.random.default_rng(seed)
    drills = simulate(rng, reps, requests)
    if kind == "failures":
        return _share_rows(name, "failed share 95%", drills, tp.BURST_SHARE)
    pooled = np.concatenate([simulate(rng, min(250, truth_reps - done), requests).ravel()
                             for done in range(0, truth_reps, 250)])
    rows = [row for p in percentiles for row in _percentile_rows(name, drills, pooled, p, bootstrap)]
    threshold = float(np.quantile(pooled, 1.0 - LATE_SHARE))
    late_truth = float((pooled > threshold).mean())
    return rows + _share_rows(name, "late share 95%", (drills > threshold).astype(float), late_truth,
                              drills)


def table(outcomes: list[Outcome]) -> str:
    """The markdown table of the docs page."""
    lines = ["| process | statement | method | error (nominal 5%) | MC 95% | too low | declined "
             "| width / spread | effective n | within nominal |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        width = f"{o.width_over_spread:.2f}" if o.width_over_spread is not None else "—"
        eff = f"{o.effective_median:,.0f}" if o.effective_median is not None else "—"
        lines.append(f"| {o.process} | {o.statement} | {o.method} | {o.error:.1%} | {o.error_low:.1%}–{o.error_high:.1%} "
                     f"| {o.too_low:.1%} | {o.declined:.0%} | {width} | {eff} | {'yes' if o.passes else '**no**'} |")
    return "\n".join(lines)


@click.command()
@click.option("--reps", default=400, show_default=True, help="Drills per process.")
@click.option("--requests", default=10_000, show_default=True, help="Requests per drill.")
@click.option("--truth-reps", default=2_000, show_default=True, help="Drills pooled for each truth.")
@click.option("--seed", default=50, show_default=True)
@click.option("--only", default="", help="Run only the processes whose name contains this.")
@click.option("--bootstrap", is_flag=True, help="Also judge a moving-block bootstrap of each percentile.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the JSON here.")
@click.option("--update", is_flag=True,
              help="Replace only the processes run in the JSON at --out, keeping the others' rows.")
def main(reps: int, requests: int, truth_reps: int, seed: int, only: str, bootstrap: bool,
         out: Path | None, update: bool) -> None:
    outcomes: list[Outcome] = []
    for index, name in enumerate(PROCESSES):
        if only not in name:
            continue
        click.echo(f"{name} ...", err=True)
        outcomes += run_process(name, reps, requests, truth_reps, seed + index, bootstrap=bootstrap)
    click.echo(table(outcomes))
    if out is not None:
        rows = [asdict(o) for o in outcomes]
        if update and out.exists():
            run = {o.process for o in outcomes}
            kept = [row for row in json.loads(out.read_text())["outcomes"] if row["process"] not in run]
            rows = [*kept, *rows]
        document = {"reps": reps, "requests": requests, "truth_reps": truth_reps, "seed": seed,
                    "outcomes": rows}
        out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
