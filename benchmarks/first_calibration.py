"""Benchmark: how long a first calibration takes, as a newcomer's first `make drill` meets it.

Runs `rushhour capacity SCENARIO --calibrate` with a fresh, empty state directory (no cached
figure to start next to), times it from the outside, and reads every search
it ran (`capacity/runs/*/capacity.json`): the throughput probe and the plan made from it, each
step's rate, verdict, measured window and wall time and each of its SLOs' evidence (with the
design effect), and where each search's time went (`time_split`). Prints a table and writes the
figures as JSON.

With `--stale RPS` the state directory starts with a cached figure of RPS req/s for the
scenario, as a drill finds one measured when the machine carried more: the calibration checks
it with one short step, and when that step misses it measures again (a re-measure).

With `--runs N` it runs N of them one after another and sums them up: their fewest, median and
most seconds, how many ended within two minutes, and the capacities found.

Usage: python -m benchmarks.first_calibration [--scenario scenarios/promo-day.yaml] [--stale RPS] [--runs N] [--out F]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 1800.0
GOAL_S = 120.0
"""The first calibration's aim: two minutes from start to exit."""


def _searches(state: Path) -> list[dict[str, Any]]:
    """Each search the calibration ran, in order: probe, plan, steps and outcome."""
    found = []
    for path in sorted((state / "capacity" / "runs").glob("*/capacity.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for entry in document.get("conditions") or []:
            steps = sorted(entry.get("steps") or [], key=lambda s: s["index"])
            found.append({
                "search": path.parent.name, "wall_s": document.get("wall_s"), "condition": entry.get("condition"),
                "probe": entry.get("probe"), "plan": entry.get("plan"), "summary": entry.get("summary"),
                "capacity_rps": entry.get("capacity_rps"),
                "step_duration_s": (entry.get("plan") or document["settings"])["step_duration_s"],
                "steps": [{"index": s["index"], "rate_rps": s["offered_rps"], "verdict": s["verdict"],
                           "limiting": s.get("limiting"), "warmup_s": s.get("warmup_s"),
                           "measured_s": s.get("measured_s"), "wall_s": s["wall_s"], "settle_s": s.get("settle_s"),
                           "reason": s.get("reason"), "slos": slo_evidence(s)}
                          for s in steps]})
    return [search | {"time_split": time_split(search)} for search in found]


def slo_evidence(step: dict[str, Any]) -> list[dict[str, Any]]:
    """Each SLO of a step as it was last judged: its call, the requests it counted, how many were
    bad or still pending, and its design effect (how many requests counted as one independent
    one), which tells a window that came up short for want of independent answers from one that
    held slow ones."""
    keep = ("name", "decision", "samples", "bad", "pending", "design_effect")
    return [{key: slo.get(key) for key in keep} for slo in step.get("slos") or []]


def time_split(search: dict[str, Any]) -> dict[str, float]:
    """Where a search's seconds went: measurement windows, warm-ups, the load generator's start and
    stop with the wait after a window for the answers still in flight, the drain before each step,
    and the rest (boot, condition, probe, planning), which is what the search's wall time leaves
    over."""
    steps = search["steps"]

    def total(key: str) -> float:
        return sum(float(step.get(key) or 0.0) for step in steps)

    windows, warmups, walls, drains = total("measured_s"), total("warmup_s"), total("wall_s"), total("settle_s")
    split = {"windows_s": windows, "warmups_s": warmups, "generator_s": walls - windows - warmups, "drain_s": drains,
             "other_s": float(search.get("wall_s") or 0.0) - walls - drains}
    return {key: round(value, 1) for key, value in split.items()}


def _cache_stale_figure(scenario: Path, state: str, rate_rps: float) -> None:
    """Cache `rate_rps` as the capacity of the scenario's relative peak in the state directory `state`."""
    from rushhour.scenarios.capacity.calibrate import cache_dir, calibration_key
    from rushhour.scenarios.spec.model import load_scenario
    from rushhour.scenarios.spec.peak import parse_relative_peak

    spec = load_scenario(scenario)
    if not isinstance(spec.traffic.peak_rps, str):
        raise click.UsageError(f"--stale: {scenario} has no peak relative to its capacity.")
    relative = parse_relative_peak(spec.traffic.peak_rps)
    previous = os.environ.get("RUSHHOUR_STATE_DIR")
    os.environ["RUSHHOUR_STATE_DIR"] = state
    try:
        key, parts = calibration_key(spec, relative.condition, source=str(scenario), base_dir=scenario.resolve().parent)
        path = cache_dir() / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": key, "scenario": spec.name, "condition": relative.condition,
                                    "capacity_rps": rate_rps, "measured_at": "2026-01-01T00:00:00+00:00",
                                    "loadavg_1m": None, "made_of": parts}, default=str), encoding="utf-8")
    finally:
        if previous is None:
            os.environ.pop("RUSHHOUR_STATE_DIR", None)
        else:
            os.environ["RUSHHOUR_STATE_DIR"] = previous


def first_calibration(scenario: Path, stale_rps: float | None = None) -> dict[str, Any]:
    """Run one first calibration of `scenario` in a fresh state directory (with a stale cached
    figure of `stale_rps`, a re-measure); its figures."""
    with tempfile.TemporaryDirectory(prefix="rushhour-state-") as state:
        if stale_rps is not None:
            _cache_stale_figure(scenario, state, stale_rps)
        env = {**os.environ, "RUSHHOUR_STATE_DIR": state}
        load_before = os.getloadavg()[0]
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "rushhour.scenarios.cli.main", "capacity", str(scenario), "--calibrate"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=LIMIT_S, check=False)
        wall = time.monotonic() - began
        return {"scenario": str(scenario), "stale_rps": stale_rps, "exit_code": done.returncode, "wall_s": round(wall, 1),
                "loadavg_1m_before": round(load_before, 2), "loadavg_1m_after": round(os.getloadavg()[0], 2),
                "output": done.stdout.splitlines()[-40:] + done.stderr.splitlines()[-10:],
                "searches": _searches(Path(state))}


def series_summary(runs: list[dict[str, Any]], goal_s: float = GOAL_S) -> dict[str, Any]:
    """A series of first calibrations in brief: their times (fewest, median, most), how many
    ended within `goal_s`, and the capacities they found."""
    walls = [float(run["wall_s"]) for run in runs]
    found = [search["capacity_rps"] for run in runs for search in run["searches"][-1:]]
    return {"runs": len(runs), "wall_s_min": min(walls), "wall_s_median": float(statistics.median(walls)),
            "wall_s_max": max(walls), "within_goal": sum(wall <= goal_s for wall in walls), "goal_s": goal_s,
            "capacity_rps": found}


def _echo(figures: dict[str, Any], scenario: Path, stale_rps: float | None) -> None:
    what = "first calibration" if stale_rps is None else f"calibration from a stale {stale_rps:g} req/s"
    click.echo(f"{what} of {scenario.name}: {figures['wall_s']:.0f} s, exit {figures['exit_code']}, "
               f"load average {figures['loadavg_1m_before']} -> {figures['loadavg_1m_after']}")
    click.echo("| search | probe (req/s) | steps | step rates -> verdicts (wall s) | capacity | search wall |")
    click.echo("| --- | ---: | ---: | --- | --- | ---: |")
    for search in figures["searches"]:
        probe = (search["probe"] or {}).get("throughput_rps", "-")
        steps = ", ".join(f"{s['rate_rps']:.1f} {s['verdict']} ({s['wall_s']:.0f})" for s in search["steps"])
        click.echo(f"| {search['search']} | {probe} | {len(search['steps'])}, the first {search['step_duration_s']:g} s | "
                   f"{steps} | {search['summary']} | {search['wall_s']} |")
    for search in figures["searches"]:
        split = search["time_split"]
        click.echo(f"{search['search']}: {split['windows_s']:g} s of windows, {split['warmups_s']:g} s of warm-ups, "
                   f"{split['generator_s']:g} s starting and stopping the load generator and waiting for answers in "
                   f"flight, {split['drain_s']:g} s waiting for the target to drain, {split['other_s']:g} s booting, "
                   "holding the condition and probing")


@click.command()
@click.option("--scenario", type=click.Path(path_type=Path, exists=True), default=ROOT / "scenarios" / "promo-day.yaml",
              show_default=True)
@click.option("--stale", "stale_rps", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Start with this cached capacity (req/s): a check step, then a re-measure if it misses.")
@click.option("--runs", type=click.IntRange(min=1, max=20), default=1, show_default=True,
              help="Run this many, one after another, and sum them up (the JSON then lists every run).")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the figures as JSON here.")
def main(scenario: Path, stale_rps: float | None, runs: int, out: Path | None) -> None:
    """Time one first calibration (or a re-measure, with --stale), or a series of them, and print
    their searches."""
    series = []
    for _ in range(runs):
        series.append(first_calibration(scenario, stale_rps))
        _echo(series[-1], scenario, stale_rps)
    document: dict[str, Any] = series[0]
    if runs > 1:
        summary = series_summary(series)
        click.echo(f"{runs} runs: {summary['wall_s_min']:.0f}-{summary['wall_s_max']:.0f} s, median "
                   f"{summary['wall_s_median']:.0f} s, {summary['within_goal']} of {runs} within {GOAL_S:g} s")
        stale = f" --stale {stale_rps:g}" if stale_rps is not None else ""
        command = f"python -m benchmarks.first_calibration --scenario {scenario}{stale} --runs {runs}"
        document = {"command": command, "summary": summary, "runs": series}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(document, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
