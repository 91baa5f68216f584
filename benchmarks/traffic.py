"""Benchmark: how long schedules of growing size take to generate.

    python -m benchmarks.traffic [--out bench-traffic.json] [--repeat 3]

Prints a table and writes the numbers as JSON. The goal is one million arrivals in under
2 s; it is measured here, not asserted in tests (shared CI machines make timings noisy).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

from rushhour.traffic_models.loader import load_traffic_model
from rushhour.traffic_models.schedule import generate_schedule

GOAL_S = 2.0
CASES = (("promo-day", 1.0), ("promo-day", 4.0), ("constant:1000", 1000.0))


def _case(spec: str, rate_scale: float, repeat: int) -> dict[str, Any]:
    model = load_traffic_model(spec)
    duration = 1000.0 if model.duration is None else None
    timings, rows = [], 0
    for attempt in range(repeat):
        began = time.perf_counter()
        frame = generate_schedule(model, seed=attempt, rate_scale=rate_scale if model.duration else 1.0,
                                  duration_s=duration)
        timings.append(time.perf_counter() - began)
        rows = len(frame)
    best = min(timings)
    return {"model": spec, "rate_scale": rate_scale, "arrivals": rows, "best_s": round(best, 4),
            "arrivals_per_s": round(rows / best), "per_million_s": round(best * 1e6 / max(rows, 1), 4)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-traffic.json"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    results = [_case(spec, scale, args.repeat) for spec, scale in CASES]
    print(f"{'model':<16}{'rate x':>8}{'arrivals':>12}{'best s':>9}{'s per 1M':>10}")
    for row in results:
        print(f"{row['model']:<16}{row['rate_scale']:>8g}{row['arrivals']:>12,}{row['best_s']:>9.3f}"
              f"{row['per_million_s']:>10.3f}")
    meets = all(r["per_million_s"] < GOAL_S for r in results)
    print(f"goal: 1M arrivals in < {GOAL_S:g} s -> {'met' if meets else 'NOT met'}")
    payload = {"goal_s_per_million": GOAL_S, "met": meets, "python": platform.python_version(), "cases": results}
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
