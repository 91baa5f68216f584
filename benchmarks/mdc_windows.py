"""How often one capacity step passes at rates around a queue's knee, under each "met" rule.

A step of the simulated queue (`benchmarks.mdc_search.simulate_step`: fresh from an empty queue,
warm-up, planned looks, pending requests, as `rushhour capacity` judges it) at 0.85, 0.95 and
1.05 times the queue's long-run capacity. Above the truth a pass is a wrong "met" (stated: at
most 5%); below it, the share that passes is the step's power. Four queues: the whole-search
bench's M/D/4 and M/D/1 (30 s steps) and the ground-truth test's M/D/c (20 s) and streaming
M/D/c (15 s).

    python -m benchmarks.mdc_windows [--steps 300] [--rule share,percentile] [--out F]
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
import numpy as np

from benchmarks.mdc_search import MDC, STREAMING, Queue, simulate_step
from benchmarks.mdc_whole import KNEE1, KNEE4, clopper_pearson
from rushhour.scenarios.capacity.job import step_rules

__all__ = ["SHARES", "pass_rates"]

SHARES = (0.85, 0.95, 1.05)
CASES: tuple[tuple[Queue, float], ...] = ((KNEE4, 30.0), (KNEE1, 30.0), (MDC, 20.0), (STREAMING, 15.0))


def pass_rates(queue: Queue, step_s: float, steps: int, seed: int) -> dict[str, object]:
    """The share of `steps` simulated steps that pass at each of `SHARES` times the truth."""
    truth = queue.truth()
    rules = step_rules(step_s, 250.0)
    rng = np.random.default_rng(seed)
    rates = {}
    for share in SHARES:
        passed = sum(simulate_step(queue, share * truth, rules, rng).verdict == "pass" for _ in range(steps))
        rates[f"{share:g}"] = {"passed": passed / steps, "ci95": list(clopper_pearson(passed, steps))}
    return {"queue": queue.name, "rule": queue.rule, "step_s": step_s, "truth_rps": round(truth, 1), "steps": steps,
            "pass_share": rates}


@click.command()
@click.option("--steps", default=300, show_default=True, type=click.IntRange(min=10, max=10_000))
@click.option("--rule", "rules", default="share,percentile", show_default=True, help="Rules, comma-separated.")
@click.option("--seed", default=5, show_default=True, type=click.IntRange(min=0))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the rows as JSON here.")
def main(steps: int, rules: str, seed: int, out: Path | None) -> None:
    """Print each queue's pass share at 0.85, 0.95 and 1.05 times its capacity, for each rule."""
    unknown = [rule for rule in rules.split(",") if rule not in ("share", "percentile")]
    if unknown:
        raise click.BadParameter(f'"{unknown[0]}" is not a rule here (share, percentile).', param_hint="--rule")
    click.echo("| queue | rule | step | truth req/s | " + " | ".join(f"pass at {s:g}x" for s in SHARES) + " |")
    click.echo("| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in SHARES) + " |")
    rows = []
    for rule in rules.split(","):
        for queue, step_s in CASES:
            rows.append(pass_rates(dataclasses.replace(queue, rule=rule), step_s, steps, seed))
            shares = rows[-1]["pass_share"]
            assert isinstance(shares, dict)
            click.echo(f"| {queue.name} | {rule} | {step_s:g} s | {rows[-1]['truth_rps']} | "
                       + " | ".join(f"{100 * v['passed']:.1f}%" for v in shares.values()) + " |")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"steps": steps, "seed": seed, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
