"""Whole capacity searches against M/D/c queues of known capacity, on a steady or wandering machine.

`benchmarks.mdc_search` runs the real search (`rushhour.scenarios.capacity.search.search`) with
each step judged as `rushhour capacity` judges it (planned looks, warm-up, pending requests, the
confirmation going on with its pass's load), the service replaced by a simulated M/D/c queue. This
module adds what makes the bench hostile and sums up whole searches, not single windows:

- every fresh step starts from an empty queue (the start-from-empty transient falls in its
  warm-up or its window, as it would on a real service);
- the machine speed wanders: each request's service time is multiplied by exp(x), x a log-AR(1)
  process on one clock through the whole search (stationary spread 0, 5% or 10%, correlation
  time `WANDER_S`), so the pass and its confirmation, and neighbouring steps, share slow states;
- the truth is the queue's long-run capacity on that machine: the highest rate whose P99 over a
  long run, the speed in its stationary law, is within the threshold.

Measured per queue, machine and step length: the share of searches whose figure lies above the
truth (with its 95% Clopper-Pearson interval; the stated error is 5%) and the distribution of
found / true (how far the figure errs on the safe side: the share 15% or more under, the share
within 10%).

With `--anchor` each search measures its anchor, a window at its lowest rate, before its first
step and again after its last, on the same machine clock (the wandering speed applies to both),
and compares the two through the product's own check (`rushhour.reports.estimate.anchor`): the
rows add the share of searches flagged as run on a changed machine, that share among the
searches that landed above the truth, the share above the truth and not flagged (a figure the
product would print as confirmed) and the anchor's extra minutes (its end window; the start
window stands for the search's first step, at that same rate).

With `--defaults` each search is the one `rushhour capacity` runs by default (`default_searches`):
30 s steps, a step that ended open stepped once more for at least `RETRY_S` and, where its
clustering asks for more, up to `RETRY_MAX_S` (`rushhour.scenarios.capacity.job.retry_window_s`),
the anchor at the start and end and a `STEP_ANCHOR_S` window after every step. `--retry-max`
changes that longest retry (equal to `--knee-steps` for a retry that never grows).

With `--relaxed-warmup` each fresh step warms up as one of a search planned from the probed
throughput does (`rushhour.scenarios.capacity.bracket.planned_warmup_s`: relaxation times of the
queue at the step's load, against its saturated throughput, workers / service time, which is what
the closed-loop probe reads on an M/D/c), instead of the fixed sixth of its window; the retry of
an open step keeps its fixed warm-up, as in the product.

    python -m benchmarks.mdc_whole [--steps 30] [--searches 200] [--wander 0,0.05,0.1] [--rule share] [--anchor] [--out F]
    python -m benchmarks.mdc_whole --defaults [--relaxed-warmup] [--searches 200] [--out F]
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np
from scipy.stats import beta, binom

from benchmarks.mdc_search import MAX_LAG_P99_MS, MDC, ChainedSteps, Queue, _Run
from rushhour.reports.estimate.anchor import family_confidence, machine_drift
from rushhour.reports.estimate.sequential import ALPHA, paired_error
from rushhour.scenarios.capacity.bracket import planned_warmup_s
from rushhour.scenarios.capacity.job import (
    RETRY_MAX_S,
    RETRY_S,
    STEP_ANCHOR_S,
    confirm_rules_for,
    opened_before,
    retry_rules_for,
    step_rules,
    with_retry,
)
from rushhour.scenarios.capacity.search import SearchResult, SearchSettings, StepVerdict, search
from rushhour.scenarios.capacity.steps import DEFAULT_MEASURE_S, StepRules

__all__ = ["KNEE1", "KNEE4", "QUEUES", "clopper_pearson", "default_searches", "median_interval", "whole_searches"]

WANDER_S = 30.0
ANCHOR_WARMUP_S = 2.0
"""The anchor window's first seconds, left out (its queue starts empty)."""
KNEE4 = Queue(name="M/D/4, 20 ms, P99 <= 100 ms", workers=4, service_ms=20.0, threshold_ms=100.0,
              percentile=99.0, min_rps=40.0, max_rps=200.0)
"""The queue `rushhour capacity` under-reported by 15-20% (steps with no late request judged not
shown met): four workers, knee at 87% load."""
KNEE1 = Queue(name="M/D/1, 10 ms, P99 <= 228 ms", workers=1, service_ms=10.0, threshold_ms=228.4,
              percentile=99.0, min_rps=20.0, max_rps=100.0)
"""One worker whose P99 reaches the threshold at 90% load: its late requests come in long bursts."""
QUEUES = {"md4": KNEE4, "md1": KNEE1, "mdc": MDC}
"""`mdc`: four workers of 100 ms, P99 <= 500 ms: a slower service, whose queue takes longer to settle."""
UNDER = 0.15


def clopper_pearson(hits: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The exact two-sided interval of a binomial share."""
    tail = (1.0 - level) / 2.0
    low = float(beta.ppf(tail, hits, trials - hits + 1)) if hits > 0 else 0.0
    high = float(beta.ppf(1.0 - tail, hits + 1, trials - hits)) if hits < trials else 1.0
    return low, high


def whole_searches(queue: Queue, *, step_s: float, searches: int, seed: int, precision: float = 0.05,
                   knee_step_s: float | None = None, met_error: float = ALPHA, retry_open: bool = False,
                   anchor: bool = False, anchor_every_s: float | None = None,
                   warmup_s: float | None = None, relaxed: bool = False,
                   retry_max_s: float | None = None) -> dict[str, object]:
    """`searches` simulated searches of `queue` with steps of `step_s` (of `knee_step_s` once a
    step has failed, when given: the bisection's steps, near the knee), each window's "met" spending
    `met_error` (a calibration's sqrt(5%)); with `retry_open`, `knee_step_s` is instead the window
    of one retry of a step that ended open (`SearchSettings.retry_open`); with `anchor`, the
    search's anchor windows of `step_s` at its lowest rate, compared (with `anchor_every_s`, one
    anchor window of that length after every step too, each against the first); `warmup_s`, when
    given, replaces each fresh step's warm-up (the product's: a sixth of the step, at most 5 s); with
    `relaxed`, each fresh step but a retry warms up as a probed search's does (module doc); with `retry_max_s`
    the retry grows from `knee_step_s` towards what its open step's clustering asks, up to that
    (`retry_window_s`): the figures above."""
    began = time.perf_counter()
    truth = queue.truth()
    rules = step_rules(step_s, MAX_LAG_P99_MS, met_error)
    knee_rules = step_rules(knee_step_s, MAX_LAG_P99_MS, met_error) if knee_step_s else rules
    if warmup_s is not None:
        rules, knee_rules = (dataclasses.replace(r, warmup_s=warmup_s) for r in (rules, knee_rules))
    settings = SearchSettings(min_rps=queue.min_rps, max_rps=queue.max_rps, precision=precision, retry_open=retry_open)
    throughput = queue.workers * 1000.0 / queue.service_ms if relaxed else None
    found, minutes, flagged = np.zeros(searches), np.zeros(searches), np.zeros(searches, dtype=bool)
    extra = np.zeros(searches)
    for k in range(searches):
        result = SearchResult()
        rules_for = functools.partial(_rules_for, result, rules, knee_rules, retry_open, throughput, precision,
                                      retry_max_s)
        steps = ChainedSteps(queue, rules_for, np.random.default_rng([seed, k]))
        start = _anchor_window(queue, steps, step_s) if anchor else None
        between = _Interleaved(queue, steps, anchor_every_s) if anchor and anchor_every_s else None
        retrying = _Retrying(between or steps, result, knee_rules if retry_open else None, retry_max_s, rules_for)
        found[k] = search(retrying, settings, into=result).capacity_rps or 0.0
        minutes[k] = steps.seconds / 60.0
        if start is not None:
            ends = [*(between.windows if between else []), _anchor_window(queue, steps, step_s)]
            level = family_confidence(len(ends))
            drifts = [machine_drift(queue.min_rps, start, end, confidence=level) for end in ends]
            flagged[k] = any(d is not None and d.changed for d in drifts)
            extra[k] = (step_s + ANCHOR_WARMUP_S + len(ends[:-1]) * ((anchor_every_s or 0.0) + ANCHOR_WARMUP_S)) / 60.0
    ratio = found / truth
    above = int(np.sum(ratio > 1.0))
    low, high = clopper_pearson(above, searches)
    quantiles = np.percentile(ratio, [2.5, 50, 97.5])
    under = int(np.sum(ratio <= 1.0 - UNDER))
    return {"queue": queue.name, "rule": queue.rule, "confirm_after_s": queue.confirm_after_s,
            "wander": queue.wander, "wander_s": queue.wander_s, "step_s": step_s, "warmup_s": rules.warmup_s,
            "warmup_rule": "relaxation" if relaxed else "fixed",
            "knee_step_s": knee_step_s or step_s, "retry_open": retry_open, "retry_max_s": retry_max_s,
            "precision": precision, "met_error_per_window": met_error,
            "searches": searches, "truth_rps": round(truth, 1), "above_truth": above / searches,
            "above_truth_ci95": [low, high], "stated_error": ALPHA, "within_stated": low <= ALPHA,
            "found_over_true": {"min": float(ratio.min()), "p2_5": float(quantiles[0]), "median": float(quantiles[1]),
                                "p97_5": float(quantiles[2]), "max": float(ratio.max())},
            "median_ci95": median_interval(ratio),
            "under_15pct": under / searches, "under_15pct_ci95": list(clopper_pearson(under, searches)),
            "within_10pct": float(np.mean(np.abs(ratio - 1.0) <= 0.1)),
            "search_minutes_median": float(np.median(minutes)), "seconds": round(time.perf_counter() - began, 1)
            } | (_anchor_figures(ratio, flagged, extra) | {"anchor_s": step_s, "anchor_every_s": anchor_every_s}
                 if anchor else {})


def default_searches(queue: Queue, *, searches: int, seed: int, warmup_s: float | None = None,
                     relaxed: bool = False) -> dict[str, object]:
    """`whole_searches` as `rushhour capacity` searches by default (module doc)."""
    return whole_searches(queue, step_s=DEFAULT_MEASURE_S, searches=searches, seed=seed, knee_step_s=RETRY_S,
                          retry_open=True, anchor=True, anchor_every_s=STEP_ANCHOR_S, warmup_s=warmup_s, relaxed=relaxed,
                          retry_max_s=RETRY_MAX_S)


def median_interval(values: np.ndarray, level: float = 0.95) -> list[float]:
    """A distribution-free interval of the median: the order statistics whose ranks a
    Binomial(n, 1/2) count brackets with `level` (the Monte Carlo error of a median)."""
    ordered = np.sort(values)
    tail = (1.0 - level) / 2.0
    low, high = (int(binom.ppf(q, ordered.size, 0.5)) for q in (tail, 1.0 - tail))
    return [float(ordered[max(low - 1, 0)]), float(ordered[min(high, ordered.size - 1)])]


def _anchor_window(queue: Queue, steps: ChainedSteps, span_s: float) -> np.ndarray:
    """One anchor window at the queue's lowest rate on the search's machine clock: its latencies (ms)
    after `ANCHOR_WARMUP_S`, in time order."""
    run = _Run.draw(queue, queue.min_rps, span_s + ANCHOR_WARMUP_S, steps.rng, steps.machine)
    return run.judged_ms[run.arrive >= ANCHOR_WARMUP_S]


class _Interleaved:
    """The search's steps with an anchor window of `span_s` after each (a step after it is fresh:
    the anchor took the machine from the pass's load)."""

    def __init__(self, queue: Queue, steps: ChainedSteps, span_s: float) -> None:
        self.queue, self.steps, self.span_s = queue, steps, span_s
        self.windows: list[np.ndarray] = []

    def __call__(self, rate: float) -> StepVerdict:
        verdict = self.steps(rate)
        self.windows.append(_anchor_window(self.queue, self.steps, self.span_s))
        self.steps._held = None
        return verdict


class _Retrying:
    """The search's steps, each open one offering the retry the product would step next
    (`rushhour.scenarios.capacity.job.with_retry`)."""

    def __init__(self, step: Callable[[float], StepVerdict], result: SearchResult, retry: StepRules | None,
                 max_s: float | None, rules_for: Callable[[float], StepRules]) -> None:
        self.step, self.result, self.retry, self.max_s, self.rules_for = step, result, retry, max_s, rules_for

    def __call__(self, rate: float) -> StepVerdict:
        was_retry = retry_rules_for(self.result, self.retry, rate) is not None
        revisit, ran_s = opened_before(self.result, rate), self.rules_for(rate).measure_s
        return with_retry(self.step(rate), ran_s=ran_s, was_retry=was_retry, retry=self.retry, max_s=self.max_s,
                          revisit=revisit)


def _anchor_figures(ratio: np.ndarray, flagged: np.ndarray, extra: np.ndarray) -> dict[str, object]:
    """What the anchor saw: flags overall, among the searches above the truth, and what stays wrong unflagged."""
    above = ratio > 1.0
    flags = int(flagged.sum())
    missed = int(np.sum(above & ~flagged))
    return {"anchor_extra_minutes": float(np.median(extra)),
            "flagged": flags / ratio.size, "flagged_ci95": list(clopper_pearson(flags, ratio.size)),
            "above_truth_count": int(above.sum()), "above_truth_flagged": int(np.sum(above & flagged)),
            "flagged_among_above": float(np.mean(flagged[above])) if above.any() else None,
            "above_truth_unflagged": missed / ratio.size,
            "above_truth_unflagged_ci95": list(clopper_pearson(missed, ratio.size))}


def _rules_for(result: SearchResult, rules: StepRules, knee_rules: StepRules, retry: bool, throughput: float | None,
               precision: float, retry_max_s: float | None, rate: float) -> StepRules:
    """A step's rules: `knee_rules` once the search has seen a failure or, with `retry`, for the
    retry of a step that ended open (its window the one the open step offered) and for a step at a
    rate that passed on a retry (that retry's window); with a `throughput`,
    any but a retry warmed up as a fresh step of a search planned from it is
    (`rushhour.scenarios.capacity.bracket.planned_warmup_s`)."""
    if retry and (longer := retry_rules_for(result, knee_rules, rate)
                  or confirm_rules_for(result, knee_rules, rate, max_s=retry_max_s)):
        return longer
    chosen = rules if retry or result.first_fail is None else knee_rules
    if throughput is None:
        return chosen
    return dataclasses.replace(chosen, warmup_s=planned_warmup_s(rate, throughput, chosen.measure_s, precision=precision))


def _row(r: dict[str, Any]) -> str:
    f = r["found_over_true"]
    low, high = r["above_truth_ci95"]
    where = "an open step's retry" if r["retry_open"] else "near the knee"
    if r["retry_open"] and r.get("retry_max_s") and r["retry_max_s"] > r["knee_step_s"]:
        where += f" (to {r['retry_max_s']:g} s as its clustering asks)"
    step = f"{r['step_s']:g} s" + (f", {r['knee_step_s']:g} s {where}" if r["knee_step_s"] != r["step_s"] else "")
    step += ", relaxation warm-up" if r["warmup_rule"] == "relaxation" else ""
    return (f"| {r['queue']} | {100 * r['wander']:.0f}% | {step} | {r['truth_rps']:.1f} | "
            f"{100 * r['above_truth']:.1f}% [{100 * low:.1f}, {100 * high:.1f}] | {f['min']:.2f} | {f['p2_5']:.2f} | "
            f"{f['median']:.2f} | {f['p97_5']:.2f} | {100 * r['under_15pct']:.0f}% | {100 * r['within_10pct']:.0f}% | "
            f"{r['search_minutes_median']:.1f} | {r['searches']} |")


def _anchor_row(r: dict[str, Any]) -> str:
    low, high = r["flagged_ci95"]
    among = "-" if r["flagged_among_above"] is None else f"{100 * r['flagged_among_above']:.0f}%"
    miss_low, miss_high = r["above_truth_unflagged_ci95"]
    return (f"| {r['queue']} | {100 * r['wander']:.0f}% | {100 * r['above_truth']:.1f}% | "
            f"{100 * r['flagged']:.1f}% [{100 * low:.1f}, {100 * high:.1f}] | "
            f"{among} ({r['above_truth_flagged']} of {r['above_truth_count']}) | "
            f"{100 * r['above_truth_unflagged']:.1f}% [{100 * miss_low:.1f}, {100 * miss_high:.1f}] | "
            f"{r['anchor_extra_minutes']:.2f} | {r['search_minutes_median']:.1f} | {r['searches']} |")


@click.command()
@click.option("--steps", default="30", show_default=True, help="Step lengths in seconds, comma-separated.")
@click.option("--searches", default=200, show_default=True, type=click.IntRange(min=10, max=5000))
@click.option("--queues", default="md4,md1", show_default=True, help=f"Queues, comma-separated ({', '.join(QUEUES)}).")
@click.option("--wander", default="0,0.05,0.1", show_default=True,
              help="Machine-speed spreads (standard deviation of the log), comma-separated.")
@click.option("--knee-steps", "knee_step", type=click.FloatRange(min=2.0), default=None,
              help="Steps of this many seconds once a step has failed (the bisection near the knee).")
@click.option("--retry-open", is_flag=True, help="Step once more, for --knee-steps seconds, at a rate whose step ended open.")
@click.option("--retry-max", "retry_max", type=click.FloatRange(min=2.0), default=None,
              help="With --retry-open, the retry grows towards what its open step's clustering asks, up to this many "
                   f"seconds (--defaults: {RETRY_MAX_S:g}).")
@click.option("--precision", default=0.05, show_default=True, type=click.FloatRange(min=0.01, max=0.5))
@click.option("--calibration", is_flag=True, help='Each window spends sqrt(5%) on "met", as a calibration\'s do.')
@click.option("--rule", type=click.Choice(["share", "percentile"]), default="share", show_default=True,
              help='"met" judged as the product does (share) or by the candidate percentile bound.')
@click.option("--confirm-after", "confirm_after", type=click.FloatRange(min=0.0, max=3600.0), default=0.0,
              show_default=True, help="Confirm a pass with a fresh step this many seconds later (0: right after it).")
@click.option("--anchor", is_flag=True, help="Measure an anchor window at the lowest rate before and after each search.")
@click.option("--anchor-every", "anchor_every", type=click.FloatRange(min=2.0), default=None,
              help="With --anchor, an anchor window of this many seconds after every step too.")
@click.option("--defaults", is_flag=True, help="Search as `rushhour capacity` does by default (module doc); "
              "overrides --steps, --knee-steps, --retry-open, --anchor and --anchor-every.")
@click.option("--warmup", "warmup", type=click.FloatRange(min=0.0, max=600.0), default=None,
              help="Each fresh step's warm-up in seconds (default: the product's, a sixth of the step, at most 5 s).")
@click.option("--relaxed-warmup", "relaxed", is_flag=True,
              help="Each fresh step but a retry warms up as a probed search's does (module doc); not with --warmup.")
@click.option("--seed", default=2, show_default=True, type=click.IntRange(min=0))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the rows as JSON here.")
def main(steps: str, searches: int, queues: str, wander: str, knee_step: float | None, retry_open: bool,
         retry_max: float | None,
         precision: float, calibration: bool, rule: str, confirm_after: float, anchor: bool,
         anchor_every: float | None, defaults: bool, warmup: float | None, relaxed: bool, seed: int,
         out: Path | None) -> None:
    """Print whole-search figures for each queue, machine and step length."""
    if relaxed and warmup is not None:
        raise click.BadParameter(f"--warmup {warmup:g} fixes every warm-up, so it cannot go with --relaxed-warmup; "
                                 "give one of them.", param_hint="--warmup")
    if defaults:
        steps, knee_step, retry_open, anchor, anchor_every = f"{DEFAULT_MEASURE_S:g}", RETRY_S, True, True, STEP_ANCHOR_S
        retry_max = RETRY_MAX_S if retry_max is None else retry_max
    try:
        lengths = [float(v) for v in steps.split(",")]
        spreads = [float(v) for v in wander.split(",")]
    except ValueError as exc:
        raise click.BadParameter(f"{exc}: give comma-separated numbers.") from exc
    unknown = [name for name in queues.split(",") if name not in QUEUES]
    if unknown:
        raise click.BadParameter(f'"{unknown[0]}" is not a queue here ({", ".join(QUEUES)}).', param_hint="--queues")
    if any(v < 2.0 for v in lengths) or any(not 0.0 <= v <= 0.5 for v in spreads):
        raise click.BadParameter("step lengths must be at least 2 s and spreads between 0 and 0.5.")
    click.echo("| queue | machine wander | step | truth req/s | above truth [95% CI] | min | 2.5th pct | median | "
               "97.5th pct | 15% or more under | within 10% | search min | searches |")
    click.echo("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    for name in queues.split(","):
        for spread in spreads:
            queue = dataclasses.replace(QUEUES[name], wander=spread, wander_s=WANDER_S, rule=rule,
                                        confirm_after_s=confirm_after)
            for length in lengths:
                rows.append(whole_searches(queue, step_s=length, searches=searches, seed=seed, knee_step_s=knee_step,
                                           precision=precision, met_error=paired_error() if calibration else ALPHA,
                                           retry_open=retry_open, anchor=anchor, anchor_every_s=anchor_every,
                                           warmup_s=warmup, relaxed=relaxed,
                                           retry_max_s=retry_max if retry_open and knee_step is not None
                                           and retry_max is not None and retry_max > knee_step else None))
                click.echo(_row(rows[-1]))
    if anchor:
        click.echo("\n| queue | machine wander | above truth | flagged [95% CI] | flagged among above | "
                   "above and not flagged [95% CI] | anchor extra min | search min | searches |")
        click.echo("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for row in rows:
            click.echo(_anchor_row(row))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"searches": searches, "seed": seed, "precision": precision, "wander_s": WANDER_S,
                                   "anchor": anchor, "defaults": defaults, "relaxed_warmup": relaxed, "rows": rows},
                                  indent=2) + "\n")


if __name__ == "__main__":
    main()
