"""Where `make test` spends its time: per worker, per lane and per file, wall and CPU.

Reads what `tests/support/suite_profile.py` recorded during a run such as

    RUSHHOUR_SUITE_PROFILE=/tmp/suite make test PYTEST_ARGS="-p tests.support.suite_profile"
    python -m benchmarks.suite_profile /tmp/suite [--out suite-profile.json]

and prints each worker's busy time and span, each xdist group's (lane's) sum, and the files that
cost the most wall and CPU (the worker's own and that of the children its tests reaped), then
writes the same as JSON.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def load(folder: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def summarise(rows: list[dict[str, Any]], top: int = 25) -> dict[str, Any]:
    t0 = min(r["start"] for r in rows)
    workers: dict[str, dict[str, float]] = defaultdict(lambda: {"busy_s": 0.0, "end_s": 0.0, "cpu_s": 0.0})
    groups: dict[str, float] = defaultdict(float)
    files: dict[str, dict[str, float]] = defaultdict(lambda: {"wall_s": 0.0, "cpu_s": 0.0, "tests": 0})
    for r in rows:
        wall = r["end"] - r["start"]
        cpu = r["cpu_s"] + r["children_cpu_s"]
        w = workers[r["worker"]]
        w["busy_s"] += wall
        w["end_s"] = max(w["end_s"], r["end"] - t0)
        w["cpu_s"] += cpu
        if r["group"]:
            groups[r["group"]] += wall
        f = files[r["id"].split("::")[0]]
        f["wall_s"] += wall
        f["cpu_s"] += cpu
        f["tests"] += 1
    by_cpu = sorted(files.items(), key=lambda kv: -kv[1]["cpu_s"])[:top]
    by_wall = sorted(files.items(), key=lambda kv: -kv[1]["wall_s"])[:top]
    return {"tests": len(rows), "span_s": round(max(r["end"] for r in rows) - t0, 1),
            "cpu_s": round(sum(r["cpu_s"] + r["children_cpu_s"] for r in rows), 1),
            "workers": {k: {kk: round(vv, 1) for kk, vv in v.items()} for k, v in sorted(workers.items())},
            "groups": {k: round(v, 1) for k, v in sorted(groups.items(), key=lambda kv: -kv[1]) if v >= 20},
            "files_by_cpu": {k: {kk: round(vv, 1) for kk, vv in v.items()} for k, v in by_cpu},
            "files_by_wall": {k: {kk: round(vv, 1) for kk, vv in v.items()} for k, v in by_wall}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    summary = summarise(load(args.folder))
    print(f"{summary['tests']} tests, span {summary['span_s']} s, CPU {summary['cpu_s']} s (tests' own and reaped children)")
    print(f"{'worker':<10}{'busy s':>9}{'end s':>9}{'CPU s':>9}")
    for name, w in summary["workers"].items():
        print(f"{name:<10}{w['busy_s']:>9.0f}{w['end_s']:>9.0f}{w['cpu_s']:>9.0f}")
    print("groups (s): " + ", ".join(f"{k} {v:.0f}" for k, v in summary["groups"].items()))
    for key in ("files_by_cpu", "files_by_wall"):
        print(f"{'file (' + key[9:] + ')':<64}{'wall s':>8}{'CPU s':>8}{'tests':>7}")
        for name, f in summary[key].items():
            print(f"{name:<64}{f['wall_s']:>8.0f}{f['cpu_s']:>8.0f}{f['tests']:>7.0f}")
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
