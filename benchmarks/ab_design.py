"""Benchmark: which interleaving gives `rushhour ab` more power, trials (ABBA) or requests?

    python -m benchmarks.ab_design [--runs 2] [--duration 60s] [--factor 1.3] [--neighbour-cores 1]
        [--simulations 200] [--seed 100] [--out results/ab-design.json]

Two parts. *Simulated*: the same machine noise (an AR(1) wander, bursts that slow a trial two- to
fourfold) under both designs, without any interference between the arms: the per-request design
pairs each slice's requests of both arms, so it shares the noise perfectly, the best case for it.
*Real*: two reference servers with the nightly scenario's settings, the candidate's quality nodes
slowed `--factor` times (the `slowdown` fault), `rushhour ab` run `--runs` times per design (designs
alternating) with a noisy neighbour (benchmarks.noisy_neighbour) taking cores in random bursts;
each run's ratio, interval and minimum detectable effect are recorded. On a small machine the two
servers loaded at once compete for its cores, so a slower candidate also slows the baseline: what
the real part measures is how much of the true factor each design still sees, and how wide its
interval is. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.noisy_neighbour import NoisyNeighbour
from rushhour.experiments.local.actions import reset, slow_down_pool
from rushhour.reference_server.launch import ServerProcess
from rushhour.reports.ab.groups import Population, compare_populations
from rushhour.scenarios.ab.trials import TrialDesign

NIGHTLY = Path(__file__).resolve().parents[1] / "scenarios" / "nightly.yaml"
PAID = Population("paid", "paid", None, None, (("latency_ms", 99.0, "p99"),))


def simulated_run(effect: float, interleave: str, seed: int, *, pairs: int = 24, per_slot: int = 40) -> str:
    """One simulated run's verdict (one population, P99, threshold x1.10, 90% family confidence)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    design = TrialDesign.build(float(pairs * 2), pairs * 2, seed, interleave)
    slots = pairs * 2 if interleave == "trials" else pairs
    z = np.zeros(slots)
    for k in range(1, slots):
        z[k] = 0.6 * z[k - 1] + rng.normal(0.0, 0.3)
    z += (rng.random(slots) < 0.15) * np.log(rng.uniform(2.0, 4.0, slots))
    slot = np.repeat(np.arange(slots), per_slot if interleave == "trials" else 2 * per_slot)  # same requests in all
    if interleave == "trials":
        trial = slot
    else:
        trial = 2 * slot + (rng.random(slot.size) < 0.5)
    arm = np.asarray(design.arms, dtype=object)[trial]
    latency = rng.lognormal(np.log(200.0), 0.5, slot.size) * np.exp(z[slot]) * np.where(arm == "candidate", effect, 1.0)
    frame = pd.DataFrame({"intended_s": slot.astype(float), "sent_s": slot.astype(float), "done_s": slot + 1.0,
                          "latency_ms": latency, "ok": True, "priority": "paid", "mode": "auto", "kind": "short",
                          "arm": arm, "trial": trial})
    [comparison] = compare_populations(frame, [PAID], pairs=pairs, threshold=1.10, confidence=0.90, seed=seed)
    return comparison.verdict


def simulate(simulations: int) -> list[dict[str, Any]]:
    rows = []
    for interleave in ("trials", "requests"):
        for effect in (1.0, 1.15, 1.3):
            verdicts = [simulated_run(effect, interleave, seed) for seed in range(simulations)]
            rows.append({"interleave": interleave, "effect": effect, "simulations": simulations,
                         "flagged": round(verdicts.count("regression") / simulations, 3),
                         "no_regression": round(verdicts.count("no_regression") / simulations, 3)})
    return rows


def boot(name: str, workdir: Path, token: str) -> ServerProcess:
    server = ServerProcess(log_path=workdir / f"{name}.log", token=token,
                           extra_args=["--nodes", "2", "--max-batch-size", "8"])
    server.start()
    return server


def real_run(index: int, interleave: str, urls: tuple[str, str], args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    out = workdir / f"run-{index:02d}-{interleave}"
    command = [sys.executable, "-m", "rushhour.scenarios.cli.main", "ab", str(NIGHTLY), "--baseline", urls[0], "--candidate",
               urls[1], "--interleave", interleave, "--duration", args.duration, "--seed", str(args.seed + index),
               "--out", str(out)]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    doc = json.loads((out / "ab.json").read_text()) if (out / "ab.json").exists() else {}
    groups = [{k: g.get(k) for k in ("name", "ratio", "ci_low", "ci_high", "mde", "pairs", "verdict")}
              for g in doc.get("groups", [])]
    return {"index": index, "interleave": interleave, "exit_code": done.returncode, "verdict": doc.get("verdict"),
            "wall_s": round(time.monotonic() - started, 1), "groups": groups,
            "last_line": (done.stdout.strip().splitlines() or [""])[-1]}


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(16)
    servers = [boot("baseline", workdir, token), boot("candidate", workdir, token)]
    neighbour = NoisyNeighbour(cores=args.neighbour_cores, duration_s=3600.0, seed=1) if args.neighbour_cores else None
    try:
        config, secret = {"rushhour_url": servers[1].url}, {"admin_token": token}
        reset(configuration=config, secrets=secret)
        slow_down_pool(pool="quality", factor=args.factor, ttl_s=3600, configuration=config, secrets=secret)
        if neighbour is not None:
            neighbour.start()
        order = ["trials", "requests"] * args.runs
        return [real_run(i, mode, (servers[0].url, servers[1].url), args, workdir) for i, mode in enumerate(order)]
    finally:
        if neighbour is not None:
            neighbour.stop()
        for server in servers:
            server.stop()


def table(simulated: list[dict[str, Any]], real: list[dict[str, Any]]) -> str:
    lines = ["| simulated | true ratio | flagged | called no regression |", "| --- | --- | --- | --- |"]
    lines += [f"| {r['interleave']} | x{r['effect']:g} | {100 * r['flagged']:.1f}% | {100 * r['no_regression']:.1f}% |"
              for r in simulated]
    lines += ["", "| real run | design | group | ratio [interval] | MDE | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for run in real:
        for g in run["groups"]:
            ratio = "inf" if g["ratio"] is None else f"x{g['ratio']:.2f}"
            interval = f"[{_x(g['ci_low'])}, {_x(g['ci_high'])}]"
            lines.append(f"| {run['index']} | {run['interleave']} | {g['name']} | {ratio} {interval} | {_x(g['mde'])} | "
                         f"{g['verdict']} |")
    return "\n".join(lines)


def _x(value: float | None) -> str:
    return "inf" if value is None else f"x{value:.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="real runs per design")
    parser.add_argument("--duration", default="60s")
    parser.add_argument("--factor", type=float, default=1.3)
    parser.add_argument("--neighbour-cores", type=int, default=1)
    parser.add_argument("--simulations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=100, help="seed of the first real run (then +1 each)")
    parser.add_argument("--workdir", default="results/ab-design")
    parser.add_argument("--out", default="results/ab-design.json")
    args = parser.parse_args(argv)
    simulated = simulate(args.simulations) if args.simulations else []
    real = measure(args) if args.runs else []
    print(table(simulated, real))
    result = {"date": time.strftime("%Y-%m-%d"), "factor": args.factor, "duration": args.duration,
              "neighbour_cores": args.neighbour_cores, "simulated": simulated, "real": real}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
