"""A calibration's planned searches against M/D/c queues of known capacity: fixed against relaxation warm-ups.

A calibration measures the saturated throughput X with a closed loop, then plans its search
around it (`rushhour.scenarios.capacity.bracket.plan_from_throughput`): rates, a window per rate
(`measure_at`) and, from X, a warm-up per rate (`warmup_at`, scaled to the queue's relaxation
time at rate / X, `rushhour.scenarios.capacity.relaxation`). Here that plan drives the real search
(`rushhour.scenarios.capacity.search.search`) against a simulated queue
(`benchmarks.mdc_search.ChainedSteps`: every fresh step from an empty queue, a confirmation going
on with its pass's load), each window spending a calibration's sqrt(5%) on "met" at its 15%
precision, with the probe reading a given share of the true X (a closed loop of a few users can
read a batching service low). Each search is run twice on the same seed: with the fixed warm-up
(a sixth of the window, 1 to 5 s) and with the plan's `warmup_at`.

Measured per queue and probe reading: the median found / true with its distribution-free 95%
interval, the share above the truth and the share 15% or more under (Clopper-Pearson 95%), and the
mean seconds of steps a search took (warm-ups included).

    python -m benchmarks.mdc_planned [--queues loose,mdc,md4,md1] [--reads 0.5,0.9,1,1.1] [--searches 200] [--out F]
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np

from benchmarks.mdc_search import MAX_LAG_P99_MS, MDC, ChainedSteps, Queue
from benchmarks.mdc_whole import KNEE1, KNEE4, UNDER, clopper_pearson, median_interval
from rushhour.reports.capacity.stepstats import samples_to_pass
from rushhour.reports.schema import SloSpec
from rushhour.scenarios.capacity.bracket import ProbePlan, plan_from_throughput
from rushhour.scenarios.capacity.calibrate import CALIBRATION_MET_ERROR, CALIBRATION_PRECISION
from rushhour.scenarios.capacity.job import SloFloor, step_rules
from rushhour.scenarios.capacity.search import search
from rushhour.scenarios.capacity.steps import StepRules

__all__ = ["LOOSE", "QUEUES", "planned_searches"]

LOOSE = Queue(name="M/D/16, 300 ms, P99 <= 1.5 s", workers=16, service_ms=300.0, threshold_ms=1500.0,
              percentile=99.0, min_rps=10.0, max_rps=80.0)
"""An objective that leaves room for queueing, as promo-day's do: the knee at 0.96 of the
throughput (53.3 answers/s), where the queue relaxes in minutes."""
QUEUES = {"loose": LOOSE, "mdc": MDC, "md4": KNEE4, "md1": KNEE1}
WARMUPS = ("fixed", "relaxation")


def _plan(queue: Queue, probe_rps: float) -> ProbePlan:
    spec = SloSpec(name="objective", kind="latency", percentile=queue.percentile, threshold_ms=queue.threshold_ms)
    floor = SloFloor("objective", 1.0, samples_to_pass(spec, met_error=CALIBRATION_MET_ERROR), 0.0)
    plan = plan_from_throughput(probe_rps, [floor], precision=CALIBRATION_PRECISION, slos=[spec])
    if plan is None:
        raise click.ClickException(f"A probe of {probe_rps:.1f} answers/s gives no plan for the queue {queue.name}.")
    return plan


def _rules_at(plan: ProbePlan, warmup: str) -> Callable[[float], StepRules]:
    """Each step's rules as the calibration's job gives them, with the fixed or the plan's warm-up."""
    def rules(rate: float) -> StepRules:
        return step_rules(plan.measure_at(rate), MAX_LAG_P99_MS, CALIBRATION_MET_ERROR,
                          warmup_s=plan.warmup_at(rate) if warmup == "relaxation" else None)
    return rules


def planned_searches(queue: Queue, *, read: float, warmup: str, searches: int, seed: int) -> dict[str, object]:
    """`searches` calibration searches of `queue` planned from a probe reading `read` of its
    throughput, with the `warmup` rule ("fixed" or "relaxation"): the figures of the module doc."""
    began = time.perf_counter()
    truth = queue.truth()
    plan = _plan(queue, read * queue.workers * 1000.0 / queue.service_ms)
    found, seconds = np.zeros(searches), np.zeros(searches)
    for k in range(searches):
        steps = ChainedSteps(queue, _rules_at(plan, warmup), np.random.default_rng([seed, k]))
        found[k] = search(steps, plan.settings, start_rps=plan.start_rps).capacity_rps or 0.0
        seconds[k] = steps.seconds
    ratio = found / truth
    above, under = int(np.sum(ratio > 1.0)), int(np.sum(ratio <= 1.0 - UNDER))
    return {"queue": queue.name, "probe_read": read, "warmup": warmup, "searches": searches, "seed": seed,
            "truth_rps": round(truth, 2), "throughput_rps": round(plan.throughput_rps, 2),
            "median_found_over_true": float(np.median(ratio)), "median_ci95": median_interval(ratio),
            "above_truth": above / searches, "above_truth_ci95": list(clopper_pearson(above, searches)),
            "under_15pct": under / searches, "under_15pct_ci95": list(clopper_pearson(under, searches)),
            "step_seconds_mean": float(np.mean(seconds)), "seconds": round(time.perf_counter() - began, 1)}


def _share(r: dict[str, Any], key: str) -> str:
    low, high = r[f"{key}_ci95"]
    return f"{100 * r[key]:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def _row(r: dict[str, Any]) -> str:
    low, high = r["median_ci95"]
    return (f"| {r['queue']} | {r['probe_read']:g} | {r['warmup']} | {r['truth_rps']:.1f} | "
            f"{r['median_found_over_true']:.3f} [{low:.3f}, {high:.3f}] | {_share(r, 'above_truth')} | "
            f"{_share(r, 'under_15pct')} | {r['step_seconds_mean']:.0f} | {r['searches']} |")


@click.command()
@click.option("--queues", default="loose,mdc,md4,md1", show_default=True,
              help=f"Queues, comma-separated ({', '.join(QUEUES)}).")
@click.option("--reads", default="0.5,0.9,1,1.1", show_default=True,
              help="What the probe reads, as shares of the true throughput, comma-separated.")
@click.option("--searches", default=200, show_default=True, type=click.IntRange(min=10, max=5000))
@click.option("--seed", default=17, show_default=True, type=click.IntRange(min=0))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the rows as JSON here.")
def main(queues: str, reads: str, searches: int, seed: int, out: Path | None) -> None:
    """Print a calibration's planned searches with fixed and relaxation warm-ups for each queue and probe reading."""
    unknown = [name for name in queues.split(",") if name not in QUEUES]
    if unknown:
        raise click.BadParameter(f'"{unknown[0]}" is not a queue here ({", ".join(QUEUES)}).', param_hint="--queues")
    try:
        shares = [float(v) for v in reads.split(",")]
    except ValueError as exc:
        raise click.BadParameter(f'"{reads}" is not a comma-separated list of shares.', param_hint="--reads") from exc
    if any(not 0.2 <= v <= 2.0 for v in shares):
        raise click.BadParameter(f'"{reads}": every probe reading must lie between 0.2 and 2.', param_hint="--reads")
    click.echo("| queue | probe reads | warm-up | truth req/s | median found/true [95% CI] | above truth [95% CI] | "
               "15% or more under [95% CI] | step seconds | searches |")
    click.echo("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    for name in queues.split(","):
        for read in shares:
            for warmup in WARMUPS:
                rows.append(planned_searches(QUEUES[name], read=read, warmup=warmup, searches=searches, seed=seed))
                click.echo(_row(rows[-1]))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"searches": searches, "seed": seed, "precision": CALIBRATION_PRECISION,
                                   "met_error_per_window": CALIBRATION_MET_ERROR, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
