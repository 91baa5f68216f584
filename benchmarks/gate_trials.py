"""Benchmark: does the nightly P99 gate catch a real +30% compute slowdown, and only that?

    python -m benchmarks.gate_trials [--nights 10] [--factor 1.3] [--baseline-runs 5]
                                     [--duration 60s] [--workdir DIR] [--out results/gate-trials.json]

Real runs, no synthetic data: K same-code runs of the nightly scenario make the baseline (laid
out as ci/refresh_baseline.sh does: run-1, run-2, ...), then N same-code nights and N slowed
nights alternate, each one `ci/nightly.sh` against that baseline. A slowed night is the nightly
scenario plus one chaos entry at its first second: experiments/gpu-throttle.json holds every
quality node at RUSHHOUR_SLOWDOWN_FACTOR for longer than the run (the fault reaches the nodes
about 2 s in, once `chaos run` has started). Every run replays the same seed, so the gate pairs
requests. Prints per-night ratios, the detection and false-alarm rates and the nightly wall time;
writes them as JSON with the machine's load average, and as a Markdown table beside it
(docs/gate.md). Goal (issue 11): >= 9/10 slowed nights flagged, <= 1/10 same-code nights
flagged, a night within 10 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kernel.clock import parse_duration
from kernel.processes import die_with_parent

REPO = Path(__file__).resolve().parents[1]
RUSHHOUR = Path(sys.executable).with_name("rushhour")
EXPERIMENT = REPO / "experiments" / "gpu-throttle.json"
GOAL_DETECTED = 0.9
GOAL_FALSE_ALARMS = 0.1
GOAL_NIGHT_S = 600.0
RUN_TIMEOUT_S = 900.0
BASELINE_ATTEMPTS = 3


@dataclass
class LoadMonitor:
    """Samples the 1-minute load average every `every_s` seconds on a daemon thread."""

    every_s: float = 10.0
    samples: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._loop, daemon=True).start()

    def stop(self) -> dict[str, float | int]:
        self._stop.set()
        values = self.samples or [load1()]
        return {"samples": len(values), "min": min(values), "mean": round(statistics.fmean(values), 2),
                "max": max(values), "every_s": self.every_s}

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append(load1())
            self._stop.wait(self.every_s)


@dataclass(frozen=True)
class Night:
    """One nightly job: what ran, its exit code, wall time and the gate's per-group figures."""

    index: int
    kind: str  # "same" or "slowed"
    exit_code: int
    wall_s: float
    load1_before: float
    verdict: str | None
    slo_verdict: str | None
    groups: list[dict[str, Any]]
    results: str

    @property
    def flagged(self) -> bool:
        return self.exit_code == 1


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def wait_for_quiet(max_load: float, max_wait_s: float, poll_s: float = 60.0) -> float:
    """Wait (up to max_wait_s) for a 1-minute load average below max_load; returns the last one."""
    deadline = time.monotonic() + max_wait_s
    current = load1()
    while current >= max_load and time.monotonic() < deadline:
        print(f"gate-trials: load average {current:.2f} >= {max_load:g}; waiting for a quieter machine",
              flush=True)
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
        current = load1()
    return current


def write_scenarios(scenario: Path, workdir: Path, duration: str, factor: float) -> tuple[Path, Path]:
    """The nightly scenario at `duration`, and the same with the whole-run slowdown added."""
    data = yaml.safe_load(scenario.read_text(encoding="utf-8"))
    data["traffic"]["duration"] = duration
    data.pop("chaos", None)
    same = workdir / "nightly-same.yaml"
    same.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    hold_s = parse_duration(duration) + 60.0  # longer than the run: the drill's end rolls it back
    data["chaos"] = [{"at": data["traffic"].get("start_clock", "00:00"), "experiment": str(EXPERIMENT),
                      "name": "gate-slowdown", "hold": f"{hold_s:g}s",
                      "env": {"RUSHHOUR_SLOWDOWN_FACTOR": f"{factor:g}"}}]
    slowed = workdir / "nightly-slowed.yaml"
    slowed.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return same, slowed


def _run(command: list[str], env: dict[str, str] | None = None) -> tuple[int, float, str]:
    start = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, text=True, capture_output=True, check=False,
                          timeout=RUN_TIMEOUT_S, preexec_fn=die_with_parent)
    return done.returncode, time.monotonic() - start, done.stdout + done.stderr


def make_baseline(scenario: Path, baseline: Path, runs: int) -> list[dict[str, Any]]:
    """K same-code runs in baseline/run-1..K, each retried (as ci/refresh_baseline.sh would refuse
    it) until it is a valid, passing run; BASELINE_ATTEMPTS failures in a row stop the trial."""
    made = []
    for index in range(1, runs + 1):
        out = baseline / f"run-{index}"
        for attempt in range(1, BASELINE_ATTEMPTS + 1):
            print(f"gate-trials: baseline run {index}/{runs} (attempt {attempt}) -> {out}", flush=True)
            shutil.rmtree(out, ignore_errors=True)
            code, wall_s, output = _run([str(RUSHHOUR), "run", str(scenario), "--out", str(out)])
            if code == 0:
                break
            print(f"gate-trials: baseline run {index} exited {code} (load average {load1():.2f}); retrying",
                  flush=True)
        else:
            raise SystemExit(f"Baseline run {out} exited {code} {BASELINE_ATTEMPTS} times; a baseline must be "
                             f"valid, passing runs.\n{output[-2000:]}")
        made.append({"run": str(out), "wall_s": round(wall_s, 1), "attempts": attempt})
    return made


def run_night(index: int, kind: str, scenario: Path, baseline: Path, workdir: Path) -> Night:
    """One `ci/nightly.sh` against the trial's baseline; its exit code is the night's verdict."""
    name = f"{kind}-{index:02d}"
    out, artifacts = workdir / "nights" / name, workdir / "artifacts" / name
    env = dict(os.environ, RUSHHOUR=str(RUSHHOUR), NIGHTLY_SCENARIO=str(scenario),
               NIGHTLY_BASELINE=str(baseline), NIGHTLY_OUT=str(out), NIGHTLY_ARTIFACTS=str(artifacts))
    before = load1()
    code, wall_s, output = _run(["bash", str(REPO / "ci" / "nightly.sh")], env)
    (workdir / "logs").mkdir(exist_ok=True)
    (workdir / "logs" / f"{name}.log").write_text(output, encoding="utf-8")
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    comparison = summary.get("comparison") or {}
    groups = [{key: group.get(key) for key in ("group", "ratio", "ci", "threshold", "noise_band",
                                                "p_baseline_ms", "p_current_ms", "regression")}
              for group in (comparison.get("decision") or {}).get("groups", [])]
    return Night(index=index, kind=kind, exit_code=code, wall_s=round(wall_s, 1), load1_before=before,
                 verdict=comparison.get("verdict"), slo_verdict=summary.get("verdict"), groups=groups,
                 results=str(out))


def summarise(nights: list[Night]) -> dict[str, Any]:
    """Detection and false-alarm rates, nightly wall time, and whether the goal is met."""
    slowed = [n for n in nights if n.kind == "slowed"]
    same = [n for n in nights if n.kind == "same"]
    detected = sum(n.flagged for n in slowed) / max(1, len(slowed))
    false_alarms = sum(n.flagged for n in same) / max(1, len(same))
    walls = [n.wall_s for n in nights]
    return {
        "slowed_nights": len(slowed), "slowed_flagged": sum(n.flagged for n in slowed),
        "same_nights": len(same), "same_flagged": sum(n.flagged for n in same),
        "detection_rate": detected, "false_alarm_rate": false_alarms,
        "night_wall_s": {"median": statistics.median(walls), "max": max(walls)} if walls else None,
        "invalid_nights": sum(n.exit_code not in (0, 1) for n in nights),
        "goal_met": bool(walls) and detected >= GOAL_DETECTED and false_alarms <= GOAL_FALSE_ALARMS
        and max(walls) <= GOAL_NIGHT_S,
    }


def _ratios(night: Night) -> str:
    return "  ".join(f"{g['group']} x{g['ratio']:.2f} [{g['ci'][0]:.2f}, {g['ci'][1]:.2f}] thr {g['threshold']:.2f}"
                     if g["ratio"] is not None and g["ci"] else f"{g['group']} —" for g in night.groups)


def print_table(nights: list[Night], summary: dict[str, Any], factor: float) -> None:
    print(f"\n{'night':<11}{'exit':>5}{'flagged':>9}{'wall s':>8}{'load1':>7}  P99 ratio vs baseline [interval], threshold")
    for night in nights:
        print(f"{night.kind + '-' + str(night.index):<11}{night.exit_code:>5}{'yes' if night.flagged else 'no':>9}"
              f"{night.wall_s:>8.0f}{night.load1_before:>7.2f}  {_ratios(night)}")
    walls = summary["night_wall_s"] or {"median": 0.0, "max": 0.0}
    print(f"\nslowed x{factor:g} nights flagged: {summary['slowed_flagged']}/{summary['slowed_nights']} "
          f"(goal >= {GOAL_DETECTED:.0%})")
    print(f"same-code nights flagged:   {summary['same_flagged']}/{summary['same_nights']} "
          f"(goal <= {GOAL_FALSE_ALARMS:.0%})")
    print(f"nightly wall time: median {walls['median']:.0f} s, max {walls['max']:.0f} s (goal <= {GOAL_NIGHT_S:.0f} s)")
    print(f"goal {'met' if summary['goal_met'] else 'NOT met'}")


def markdown(result: dict[str, Any]) -> str:
    """The README's table: the rates, the nightly time, the load, then one row per night."""
    s, load, cfg = result["summary"], result["load_average"], result["config"]
    walls = s["night_wall_s"] or {"median": 0.0, "max": 0.0}
    lines = ["| measure | result | goal |", "| --- | --- | --- |",
             (f"| slowed nights flagged (compute x{cfg['factor']:g} on every quality node) | "
              f"**{s['slowed_flagged']}/{s['slowed_nights']}** | >= 9/10 |"),
             f"| same-code nights flagged (false alarms) | **{s['same_flagged']}/{s['same_nights']}** | <= 1/10 |",
             (f"| nightly wall time (`ci/nightly.sh`: run + report + compare) | median {walls['median']:.0f} s, "
              f"max {walls['max']:.0f} s | <= 600 s |"),
             (f"| load average (1 min) during the trial, its own runs included | min {load['min']:.2f}, "
              f"mean {load['mean']:.2f}, max {load['max']:.2f} | |"),
             "", "| night | exit | wall s | load1 before | P99 ratio vs baseline [interval] (threshold) |",
             "| --- | --- | --- | --- | --- |"]
    for night in result["nights"]:
        ratios = "; ".join(f"{g['group']} x{g['ratio']:.2f} [{g['ci'][0]:.2f}, {g['ci'][1]:.2f}] ({g['threshold']:.2f})"
                           if g["ratio"] is not None and g["ci"] else f"{g['group']} -" for g in night["groups"])
        lines.append(f"| {night['kind']}-{night['index']} | {night['exit_code']} | {night['wall_s']:.0f} | "
                     f"{night['load1_before']:.2f} | {ratios} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=10, help="same-code nights, and as many slowed ones")
    parser.add_argument("--factor", type=float, default=1.3, help="compute slowdown of the slowed nights")
    parser.add_argument("--baseline-runs", type=int, default=5, help="same-code runs in the baseline")
    parser.add_argument("--duration", default=None, help="run length (default: the scenario's own)")
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "nightly.yaml")
    parser.add_argument("--workdir", type=Path, default=None, help="default results/gate-trials-<UTC time>")
    parser.add_argument("--out", type=Path, default=Path("results/gate-trials.json"))
    parser.add_argument("--quiet-load", type=float, default=1.5, help="wait for a load average below this")
    parser.add_argument("--max-wait-min", type=float, default=20.0, help="longest wait for a quiet machine")
    args = parser.parse_args(argv)
    workdir = (args.workdir or Path(f"results/gate-trials-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    duration = args.duration or str(yaml.safe_load(args.scenario.read_text())["traffic"]["duration"])
    same, slowed = write_scenarios(args.scenario, workdir, duration, args.factor)
    load_at_start = wait_for_quiet(args.quiet_load, 60.0 * args.max_wait_min)
    monitor = LoadMonitor()
    monitor.start()
    started = time.monotonic()
    baseline = make_baseline(same, workdir / "baseline", args.baseline_runs)
    nights: list[Night] = []
    for index in range(1, args.nights + 1):
        for kind, scenario in (("same", same), ("slowed", slowed)):
            print(f"gate-trials: night {kind}-{index} of {args.nights}", flush=True)
            nights.append(run_night(index, kind, scenario, workdir / "baseline", workdir))
            print(f"gate-trials: {kind}-{index} exit {nights[-1].exit_code}: {_ratios(nights[-1])}", flush=True)
    load = {"at_start": load_at_start, **monitor.stop()}
    summary = summarise(nights)
    print_table(nights, summary, args.factor)
    print(f"load average (1 min) during the trial: min {load['min']:.2f}, mean {load['mean']:.2f}, "
          f"max {load['max']:.2f} ({load['samples']} samples; the trial's own runs included)")
    result = {"config": {"nights": args.nights, "factor": args.factor, "baseline_runs": args.baseline_runs,
                         "duration": duration, "scenario": str(args.scenario), "workdir": str(workdir),
                         "cpu_count": os.cpu_count()},
              "summary": summary, "load_average": load, "baseline": baseline,
              "trial_wall_s": round(time.monotonic() - started, 1), "nights": [asdict(n) for n in nights]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')} (runs in {workdir})")


if __name__ == "__main__":
    main()
