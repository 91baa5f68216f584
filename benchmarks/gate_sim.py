"""Benchmark: the A/B verdict on simulated nights whose truth is known (no server, seconds a night).

    python -m benchmarks.gate_sim [--nights 200] [--pairs 96] [--per-trial 60] [--seed 0]

Each night is tests/reports/ab/simulate.py's: random arms per slice, a machine state that wanders
(AR(1) on the log scale, lasting several slices) and bursts that slow a slice two- to fourfold;
every request lognormal around 200 ms, the candidate's multiplied by the effect; failures answered
at once. Kinds: same code, x1.3, and both with 0.25% failures in both arms. Prints per kind the
share of nights flagged (exit 1), passed (exit 0) and undecided, with one-sided 95%
Clopper-Pearson bounds, judged by `rushhour.reports.ab.groups.compare_populations` on one P99.
"""

from __future__ import annotations

import argparse
import time

from rushhour.reports.ab.calibration import clopper_pearson_upper
from rushhour.reports.ab.groups import Population, compare_populations
from tests.reports.ab.simulate import simulate

PAID = Population("paid", "paid", None, None, (("latency_ms", 99.0, "p99"),))
KINDS = {"same code": (1.0, 0.0), "x1.3": (1.3, 0.0), "same code, 0.25% failures": (1.0, 0.0025),
         "x1.3, 0.25% failures": (1.3, 0.0025)}


def night(effect: float, fail: float, seed: int, pairs: int, per_trial: int) -> str:
    requests = simulate(effect, pairs=pairs, per_trial=per_trial, seed=seed, fail_share=fail, base_fail_share=fail,
                        interleave="requests")
    [c] = compare_populations(requests, [PAID], pairs=pairs, threshold=1.10, confidence=0.90, seed=seed)
    if c.verdict == "regression":
        return "flagged"
    return "passed" if c.verdict == "no_regression" and c.errors.not_worse else "undecided"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=96)
    parser.add_argument("--per-trial", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| kind | nights | flagged | passed | undecided | one-sided 95% bound |")
    print("| --- | --- | --- | --- | --- | --- |")
    started = time.monotonic()
    for kind, (effect, fail) in KINDS.items():
        outcomes = [night(effect, fail, args.seed + i, args.pairs, args.per_trial) for i in range(args.nights)]
        n, flagged = len(outcomes), outcomes.count("flagged")
        if effect == 1.0:
            bound = f"false alarms <= {100 * clopper_pearson_upper(flagged, n):.1f}%"
        else:
            bound = f"power >= {100 * (1 - clopper_pearson_upper(n - flagged, n)):.1f}%"
        print(f"| {kind} | {n} | {flagged} | {outcomes.count('passed')} | {outcomes.count('undecided')} | {bound} |",
              flush=True)
    print(f"\n{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
