"""Benchmark: the A/B verdict on simulated nights of the nightly scenario whose truth is known.

    python -m benchmarks.gate_sim [--nights 30] [--seed 0] [--out docs/data/gate-sim.json]

Each night is shaped like one of scenarios/nightly.yaml (tests/reports/ab/simulate.py's `night`):
its duration cut into the slices `rushhour ab` lays out by default, 16 requests a second per arm,
sent in twos (one to each arm, the same text), paid and free, the first tenth of the slice pairs
warming both arms; every request's latency lognormal around 200 ms (its text's part sigma 0.4, its
own 0.3), the candidate's multiplied by the effect, failures answered at once. It is judged by
`rushhour.reports.ab.groups.compare_populations` on the nightly scenario's own SLOs (P99 and P50
per priority, and the night's failure share: five tests), each percentile at its SLO's own A/B
threshold (the P99 at x1.25) and the others at the defaults of `rushhour ab` (threshold x1.10, 90%
confidence, 0.5-point failure margin). The machine is one of the processes of `simulate.PROCESSES`: quiet,
shared bursts, or bursts with a slow state of each server that lasts several slices.

Prints per process and kind the nights flagged (exit 1), passed (exit 0) and undecided (exit 3),
with one-sided 95% Clopper-Pearson bounds, and which comparison left undecided nights open;
writes the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from rushhour.reports.ab.calibration import clopper_pearson_upper
from rushhour.reports.ab.groups import (
    DEFAULT_CONFIDENCE,
    DEFAULT_ERROR_MARGIN,
    DEFAULT_THRESHOLD,
    compare_populations,
    populations,
    slo_thresholds,
)
from rushhour.scenarios.ab.trials import TrialDesign, default_trials
from rushhour.scenarios.spec.model import load_scenario
from tests.reports.ab.simulate import PROCESSES, night

KINDS = {"same code": (1.0, 0.0), "x1.3": (1.3, 0.0), "same code, 0.25% failures": (1.0, 0.0025),
         "x1.3, 0.25% failures": (1.3, 0.0025)}
SCENARIO = load_scenario("scenarios/nightly.yaml")
DESIGN = TrialDesign.build(SCENARIO.traffic.duration_s, default_trials(SCENARIO.traffic.duration_s), 0, "requests",
                           warmup=True)


def judge_night(effect: float, fail: float, process: str, seed: int) -> tuple[str, list[str]]:
    """The night's outcome (flagged, passed or undecided) and the comparisons that stayed open."""
    pops = populations(SCENARIO.slos, ["free", "paid"])
    slices = DESIGN.trials // 2
    requests = night(effect, process=process, seed=seed, slices=slices, slice_s=DESIGN.trial_s, fail_share=fail)
    found = compare_populations(requests, pops, pairs=slices, threshold=DEFAULT_THRESHOLD,
                                confidence=DEFAULT_CONFIDENCE, seed=seed, margin=DEFAULT_ERROR_MARGIN,
                                first_pair=DESIGN.warmup_pairs, thresholds=slo_thresholds(SCENARIO.slos))
    if any(c.verdict == "regression" for c in found):
        return "flagged", []
    open_ = [f"{c.slo}" for c in found if c.verdict != "no_regression"]
    open_ += ["failures"] if found and not found[0].errors.not_worse else []
    return ("undecided", open_) if open_ else ("passed", [])


def row(process: str, kind: str, nights: int, seed: int) -> dict[str, object]:
    effect, fail = KINDS[kind]
    outcomes = [judge_night(effect, fail, process, seed + i) for i in range(nights)]
    counts = Counter(o for o, _ in outcomes)
    opened = Counter(name for _, names in outcomes for name in names)
    flagged = counts["flagged"]
    out: dict[str, object] = {"process": process, "kind": kind, "effect": effect, "fail_share": fail,
                              "nights": nights, "flagged": flagged, "passed": counts["passed"],
                              "undecided": counts["undecided"], "left_open": dict(opened.most_common())}
    if effect == 1.0:
        out["false_alarms_upper"] = clopper_pearson_upper(flagged, nights)
        out["undecided_upper"] = clopper_pearson_upper(counts["undecided"], nights)
    else:
        out["power_lower"] = 1.0 - clopper_pearson_upper(nights - flagged, nights)
    return out


def line(r: dict[str, object]) -> str:
    if "power_lower" in r:
        bound = f"power >= {100 * float(r['power_lower']):.1f}%"  # type: ignore[arg-type]
    else:
        bound = (f"false alarms <= {100 * float(r['false_alarms_upper']):.1f}%, "  # type: ignore[arg-type]
                 f"undecided <= {100 * float(r['undecided_upper']):.1f}%")  # type: ignore[arg-type]
    opened = ", ".join(f"{k} {v}" for k, v in r["left_open"].items()) or "-"  # type: ignore[attr-defined]
    return (f"| {r['process']} | {r['kind']} | {r['nights']} | {r['flagged']} | {r['passed']} | {r['undecided']} | "
            f"{bound} | {opened} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--processes", nargs="+", default=list(PROCESSES), choices=PROCESSES)
    parser.add_argument("--out", type=Path, default=Path("docs/data/gate-sim.json"))
    args = parser.parse_args()
    print(f"nightly: {DESIGN.trials // 2} slices of {DESIGN.trial_s:g} s, {DESIGN.warmup_pairs} warming both arms\n")
    print("| process | kind | nights | flagged | passed | undecided | one-sided 95% bounds | left open (nights) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    started, rows = time.monotonic(), []
    for process in args.processes:
        for kind in KINDS:
            rows.append(row(process, kind, args.nights, args.seed))
            print(line(rows[-1]), flush=True)
    seconds = time.monotonic() - started
    print(f"\n{seconds:.0f} s")
    args.out.write_text(json.dumps({"measured": datetime.now(UTC).isoformat(timespec="seconds"),
                                    "command": f"python -m benchmarks.gate_sim --nights {args.nights}",
                                    "machine": "2-core VM, no GPU", "seconds": round(seconds, 1),
                                    "threshold": DEFAULT_THRESHOLD,
                                    "slo_thresholds": slo_thresholds(SCENARIO.slos), "confidence": DEFAULT_CONFIDENCE,
                                    "error_margin": DEFAULT_ERROR_MARGIN, "slices": DESIGN.trials // 2,
                                    "slice_s": DESIGN.trial_s, "warmup_pairs": DESIGN.warmup_pairs, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
