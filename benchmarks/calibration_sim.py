"""Benchmark: how long a first calibration's search takes, simulated, for two ways of planning it.

Each simulated search runs the real `rushhour.scenarios.capacity.search` over a made-up service. The knee
k is fixed; the probe reads k / `ratio` times a log-normal error; a step at rate r passes with a
probability that falls around the knee over a few per cent (a logistic in r / k of width `fuzz`:
near the knee a real step passes only with none of its few hundred paid requests slow). A passing
step costs its warm-up and its whole window (sized as `rushhour.scenarios.capacity.bracket.window_s` sizes
promo-day's: the paid requests a calibration window needs, 175 at a 28% share, with the margin); a failing one ends sooner the
further above the knee it is, as the real steps do once their last look can no longer pass. A
step at the rate that just passed goes on with that pass's load, as a real search's
confirmation does (`rushhour.scenarios.capacity.stepper`), so it costs no warm-up.

Two plans are compared: "as now" is `rushhour.scenarios.capacity.bracket.plan_from_throughput` itself
(the first step one move above the estimated knee, the faster climb from a pass two moves past
the probed throughput, each step as long as its rate needs), and "at the knee" is the same plan
with the first step at the estimated knee and the faster climb from any pass past the
throughput. The table gives the seconds of steps (without the boot and the probe, about 20 s on
the two-core VM), the share of searches within 95 s of steps, the steps, and the capacity found
over the knee. Both plans search with the calibration's precision unless `--precision` says
otherwise. `--start-moves` adds the plan as now with its first step moved that many moves (one
precision each) up or down, to see whether one move above the estimated knee is still the best
place to start.

Usage: python -m benchmarks.calibration_sim [--searches 1500] [--precision P] [--start-moves -1,1] [--out F]
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import click
import numpy as np

from rushhour.reports.capacity.stepstats import samples_to_pass
from rushhour.reports.schema import SloSpec
from rushhour.scenarios.capacity.bracket import ProbePlan, plan_from_throughput
from rushhour.scenarios.capacity.calibrate import CALIBRATION_MET_ERROR, CALIBRATION_PRECISION
from rushhour.scenarios.capacity.job import SloFloor
from rushhour.scenarios.capacity.search import SearchSettings, StepVerdict, search

KNEE = 60.0
WARMUP_S = 5.0
PAID = SloSpec(name="p99-paid", kind="latency", percentile=99, threshold_ms=2000)
FLOORS = [SloFloor("p99-paid", 0.28, samples_to_pass(PAID, met_error=CALIBRATION_MET_ERROR), 0.0)]
"""promo-day's paid P99: 28% of the mix, 175 requests for a calibration window to show it met (the
longest step decides)."""
PROBE_ERROR = 0.12
QUICK_SHARE = 0.1
PLANS = ("as now", "at the knee")


def _plan(name: str, throughput: float, precision: float, moves: int = 0
          ) -> tuple[SearchSettings, float, ProbePlan]:
    """The settings and first rate of plan `name` for a probed `throughput`; with `moves`, the plan
    as now with its first step that many moves up (or down, below zero)."""
    plan = plan_from_throughput(throughput, FLOORS, precision=precision, slos=[PAID])
    assert plan is not None
    if name == "as now":
        return plan.settings, plan.start_rps * plan.settings.growth ** moves, plan
    settings = dataclasses.replace(plan.settings, accelerate_above=throughput)
    return settings, plan.start_rps / settings.growth, plan


def _one(rng: np.random.Generator, name: str, *, fuzz: float, ratio: float,
         precision: float = CALIBRATION_PRECISION, moves: int = 0) -> tuple[float, int, float]:
    """One search: (seconds of steps, steps, capacity over the knee)."""
    settings, start, plan = _plan(name, KNEE / ratio * math.exp(rng.normal(0.0, PROBE_ERROR)), precision, moves)
    spent = [0.0]
    held: list[float] = []  # the rate of the step just passed, whose load goes on

    def step(rate: float) -> StepVerdict:
        window = plan.measure_at(rate)
        warmup = 0.0 if held == [rate] else WARMUP_S
        held.clear()
        if rng.random() < 0.5 * (1.0 - math.tanh((rate / KNEE - 1.0) / fuzz / 2.0)):  # the logistic, overflow-free
            spent[0] += warmup + window
            held.append(rate)
            return StepVerdict(rate, "pass")
        share = min(1.0, max(QUICK_SHARE, 0.04 / max(rate / KNEE - 0.96, 1e-3)))
        spent[0] += warmup + window * share
        return StepVerdict(rate, "fail", "p99-paid")

    result = search(step, settings, start_rps=start)
    return spent[0], len(result.steps), (result.capacity_rps or 0.0) / KNEE


def _label(moves: int) -> str:
    return f"as now, first step {moves:+d} move{'s' if abs(moves) > 1 else ''}"


def simulate(searches: int, *, fuzz: float, ratio: float, seed: int = 5,
             precision: float = CALIBRATION_PRECISION, start_moves: tuple[int, ...] = ()) -> dict[str, dict[str, float]]:
    """Every plan (and the plan as now with each of `start_moves`) over the same `searches`
    services (same seed), summarised."""
    rows = {}
    variants = [(name, 0) for name in PLANS] + [("as now", moves) for moves in start_moves if moves]
    for name, moves in variants:
        rng = np.random.default_rng([seed, round(fuzz * 1000), round(ratio * 100)])
        runs = np.array([_one(rng, name, fuzz=fuzz, ratio=ratio, precision=precision, moves=moves)
                         for _ in range(searches)])
        seconds = runs[:, 0]
        rows[_label(moves) if moves else name] = {
            "mean_s": float(seconds.mean()), "p90_s": float(np.quantile(seconds, 0.9)),
            "within_95_s": float(np.mean(seconds <= 95.0)), "steps": float(runs[:, 1].mean()),
            "capacity_over_knee_median": float(np.median(runs[:, 2]))}
    return rows


@click.command()
@click.option("--searches", type=click.IntRange(min=10), default=1500, show_default=True)
@click.option("--precision", type=click.FloatRange(min=0.01, max=1.0), default=CALIBRATION_PRECISION,
              show_default=True, help="The search's precision (the calibration's unless told).")
@click.option("--start-moves", default="", help="Also the plan as now with its first step moved by these "
              "moves, comma-separated (e.g. -1,1).")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the table as JSON here.")
def main(searches: int, precision: float, start_moves: str, out: Path | None) -> None:
    """Print the simulated searches' time and steps for each plan, knee fuzz and probe bias."""
    try:
        moves = tuple(int(part) for part in start_moves.split(",") if part.strip())
    except ValueError as exc:
        raise click.BadParameter(f'"{start_moves}" is not a comma-separated list of whole numbers.',
                                 param_hint="--start-moves") from exc
    table: list[dict[str, Any]] = []
    click.echo("| knee fuzz | knee / probe | plan | mean s of steps | p90 s | within 95 s | steps | capacity / knee |")
    click.echo("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for fuzz in (0.02, 0.04):
        for ratio in (1.0, 1.1):
            for name, row in simulate(searches, fuzz=fuzz, ratio=ratio, precision=precision,
                                      start_moves=moves).items():
                table.append({"fuzz": fuzz, "knee_over_probe": ratio, "plan": name, **row})
                click.echo(f"| {fuzz:g} | {ratio:g} | {name} | {row['mean_s']:.0f} | {row['p90_s']:.0f} | "
                           f"{100 * row['within_95_s']:.0f}% | {row['steps']:.2f} | {row['capacity_over_knee_median']:.3f} |")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        document = {"searches": searches, "precision": precision, "start_moves": list(moves), "rows": table}
        out.write_text(json.dumps(document, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
