"""Benchmark: how long build_reports takes on a million-request run.

    python -m benchmarks.reports [--requests 1000000] [--out results/bench-reports.json]

Prints a table of timings per stage and writes them as JSON. Goal: under 15 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GOAL_S = 15.0


def _timed(label: str, call: Callable[[], Any], timings: dict[str, float]) -> Any:
    start = time.perf_counter()
    result = call()
    timings[label] = time.perf_counter() - start
    return result


def run_bench(n_requests: int, workdir: Path) -> dict[str, Any]:
    """Synthesise a results directory, then time loading, aggregating and the full build."""
    from benchmarks.synth import make_results
    from rushhour.reports.build import build_reports
    from rushhour.reports.gate.compare import compare_runs
    from rushhour.reports.rundata.results import load_run
    from rushhour.reports.summary.aggregate import summarise

    timings: dict[str, float] = {}
    root = _timed("synthesise (not part of the goal)",
                  lambda: make_results(workdir / "run", n_requests=n_requests, duration_s=600.0), timings)
    run = _timed("load_run", lambda: load_run(root), timings)
    _timed("summarise", lambda: summarise(run), timings)
    _timed("build_reports (total)", lambda: build_reports(root), timings)
    _timed("compare_runs (same run twice)", lambda: compare_runs(root, root), timings)
    return {
        "requests": n_requests, "goal_s": GOAL_S,
        "build_reports_s": timings["build_reports (total)"],
        "met_goal": timings["build_reports (total)"] < GOAL_S,
        "timings_s": timings, "cpu_count": os.cpu_count(), "python": platform.python_version(),
        "html_bytes": (root / "report.html").stat().st_size,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("results/bench-reports.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rushhour-bench-") as tmp:
        result = run_bench(args.requests, Path(tmp))
    print(f"{'stage':<36}{'seconds':>10}")
    for label, seconds in result["timings_s"].items():
        print(f"{label:<36}{seconds:>10.2f}")
    verdict = "met" if result["met_goal"] else "MISSED"
    print(f"build_reports on {result['requests']:,} requests: {result['build_reports_s']:.2f} s "
          f"(goal < {GOAL_S:g} s: {verdict})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
