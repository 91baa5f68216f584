"""The harness's own overhead on this machine: the check `rushhour run` does first, run twice.

Fires the ladder of `rushhour.scenarios.run.overhead` (one Locust process, the smoke scenario's mix and
protocol) at the null target twice, not cached, and prints per rung the generator's lag, whether
it was valid, and the latency the harness adds; the JSON holds both runs, the load average and
how long each check took.

    python -m benchmarks.overhead [--out docs/data/overhead.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path

from rushhour.scenarios.run.overhead import measure_overhead
from rushhour.scenarios.spec.model import load_scenario
from rushhour.scenarios.spec.plan import build_plan

SMOKE = Path(__file__).resolve().parents[1] / "scenarios" / "smoke.yaml"


def _row(run: int, step: dict) -> str:
    lat = step["latency_ms"] or {}
    return (f"{run:>3} {step['rate_rps']:>7g} {'yes' if step['valid'] else 'no':>5} {step['lag_p99_ms'] or 0:>9.1f} "
            f"{lat.get('p50') or 0:>8.1f} {lat.get('p99') or 0:>8.1f} {lat.get('p99_9') or 0:>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("overhead.json"))
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    plan = build_plan(load_scenario(SMOKE), source=str(SMOKE), base_dir=SMOKE.parent)
    runs = []
    for _ in range(args.runs):
        load_before = os.getloadavg()[0]
        record = measure_overhead(plan.schedule, target=plan.scenario.target.wire_dict(),
                                  lag_limit_ms=plan.scenario.load.max_lag_p99_ms)
        runs.append(record | {"loadavg_1m_before": round(load_before, 2)})
    print("run    rate valid  lag P99   lat P50  lat P99  lat P99.9   (ms; one Locust process, null target)")
    for i, record in enumerate(runs, start=1):
        for step in record["steps"]:
            print(_row(i, step))
        print(f"    highest valid rate {record['max_valid_rps_per_process']} req/s; check took {record['measure_s']} s; "
              f"load average before {record['loadavg_1m_before']}")
    document = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.node(),
                "cpu_count": os.cpu_count(), "command": "python -m benchmarks.overhead", "runs": runs}
    args.out.write_text(json.dumps(document, indent=2), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
