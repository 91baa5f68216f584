"""Benchmark: how far apart repeated throughput probes read on one server, for two probe lengths.

A first calibration starts its search from the throughput probe (`rushhour.scenarios.capacity.throughput`):
one move above the knee it estimates from the probed figure. A probe that reads 20% low starts
the search two moves below the knee, and each of those moves is a whole passing step. This
benchmark boots the reference server as a calibration of SCENARIO does, holds the condition
(n-1 by default), and runs the probe again and again on that one server, the cache emptied
before each, alternating two variants so that both meet the same machine: the probe as shipped
(levels of 1.5 s or 50 answers, at most 5 s) and one with longer levels (4 s or 200 answers).
It prints each reading and each variant's spread (lowest, median, highest, and the coefficient
of variation) and writes them as JSON.

Usage: python -m benchmarks.probe_spread [--scenario scenarios/promo-day.yaml] [--condition n-1] [--repeats 5] [--out F]
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import click
import httpx

from rushhour.scenarios.capacity import throughput
from rushhour.scenarios.capacity.calibrate import calibration_job
from rushhour.scenarios.capacity.conditions import Healthy, NMinusOne
from rushhour.scenarios.capacity.pool_status import settle
from rushhour.scenarios.capacity.steps import step_schedule
from rushhour.scenarios.capacity.target import open_target
from rushhour.scenarios.spec.model import load_scenario

ROOT = Path(__file__).resolve().parents[1]
VARIANTS: dict[str, dict[str, float]] = {
    "as shipped": {"level_s": throughput.LEVEL_S, "answers": throughput.LEVEL_ANSWERS},
    "longer levels": {"level_s": 4.0, "answers": 200},
}


def spread(readings: list[float]) -> dict[str, float]:
    """Lowest, median and highest reading, and the coefficient of variation (sample SD over mean)."""
    mean = statistics.fmean(readings)
    deviation = statistics.stdev(readings) if len(readings) > 1 else 0.0
    return {"low": round(min(readings), 1), "median": round(statistics.median(readings), 1),
            "high": round(max(readings), 1), "cv": round(deviation / mean, 3) if mean else 0.0}


def probe_spread(scenario: Path, condition: str, repeats: int) -> dict[str, Any]:
    """Boot, hold `condition`, and run each variant `repeats` times, alternating; every reading."""
    spec = load_scenario(scenario)
    job = calibration_job(spec, condition, source=str(scenario), base_dir=scenario.resolve().parent)
    target = open_target(job, say=click.echo)
    held = NMinusOne(target.url, target.token, wait_ready=False) if condition == "n-1" else Healthy()
    rows = step_schedule(job.mix, rate_rps=throughput.PROBE_ROWS / throughput.PROBE_SPAN_S,
                         duration_s=throughput.PROBE_SPAN_S, seed=job.seed)
    readings: list[dict[str, Any]] = []
    held.hold()
    try:
        for repeat in range(repeats):
            for name, knobs in VARIANTS.items():
                settle(target.url)
                httpx.post(f"{target.url}/admin/cache/flush", headers={"Authorization": f"Bearer {target.token}"},
                           timeout=10.0, trust_env=False)
                limits = httpx.Limits(max_connections=throughput.MOST_USERS)
                with httpx.Client(base_url=target.url, trust_env=False, limits=limits) as client:
                    began = time.monotonic()
                    found = throughput.closed_loop(
                        throughput.row_sender(client, job.protocol, rows, job.scenario.load.languages),
                        level_s=knobs["level_s"], answers=int(knobs["answers"]))
                readings.append({"repeat": repeat + 1, "variant": name, "wall_s": round(time.monotonic() - began, 1),
                                 **found.as_dict()})
                click.echo(f"  {name}: {found.throughput_rps:.1f} answers/s")
    finally:
        held.release()
        target.close()
    return {"scenario": str(scenario), "condition": condition, "readings": readings,
            "variants": {name: spread([r["throughput_rps"] for r in readings if r["variant"] == name])
                         | {"wall_s": round(statistics.fmean(r["wall_s"] for r in readings if r["variant"] == name), 1)}
                         for name in VARIANTS}}


@click.command()
@click.option("--scenario", type=click.Path(path_type=Path, exists=True), default=ROOT / "scenarios" / "promo-day.yaml",
              show_default=True)
@click.option("--condition", type=click.Choice(["healthy", "n-1"]), default="n-1", show_default=True)
@click.option("--repeats", type=click.IntRange(min=2, max=20), default=5, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the figures as JSON here.")
def main(scenario: Path, condition: str, repeats: int, out: Path | None) -> None:
    """Probe one server repeatedly with both variants and print how far the readings spread."""
    figures = probe_spread(scenario, condition, repeats)
    click.echo("| variant | probe wall (s) | lowest | median | highest | CV |")
    click.echo("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, row in figures["variants"].items():
        click.echo(f"| {name} | {row['wall_s']} | {row['low']} | {row['median']} | {row['high']} | {row['cv']} |")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
