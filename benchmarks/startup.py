"""Benchmark: the CPU each kind of rushhour process spends importing what it needs before its work.

Every drill starts a gateway, its nodes and one or more Locust processes; every capacity step starts
a Locust process again, and a node restarted by a fault imports everything anew. For each kind a
fresh interpreter imports that process's modules and reports its own CPU time (user + system,
`resource.getrusage`). With several `--tree`s (checkouts of different commits, each with the same
environment) the trees take turns within every round, so a busy moment on a shared machine hits
them alike; the table shows each kind's median per tree.

Usage: python -m benchmarks.startup [--rounds 7] [--tree PATH ...] [--out startup.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

KINDS = {
    "node": "import rushhour.reference_server.node.__main__",
    "gateway": "import rushhour.reference_server.__main__, rushhour.reference_server.gateway.app",
    "locust": "import locust.main, rushhour.scenarios.generator.locustfile",
    "cli run": "import rushhour.scenarios.cli.main, rushhour.scenarios.cli.run",
}
PROBE = """
import resource, sys
{imports}
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime, "pandas" in sys.modules)
"""


def _once(tree: Path, imports: str) -> tuple[float, bool]:
    """CPU seconds of a fresh interpreter in `tree` that imports `imports`, and whether pandas came along."""
    done = subprocess.run([sys.executable, "-c", PROBE.format(imports=imports)], cwd=tree, capture_output=True,
                          text=True, timeout=120, check=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)})
    cpu, pandas = done.stdout.split()
    return float(cpu), pandas == "True"


def measure(trees: list[Path], rounds: int) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {str(t): {k: [] for k in KINDS} for t in trees}
    pandas: dict[str, dict[str, bool]] = {str(t): {} for t in trees}
    for _ in range(rounds):
        for kind, imports in KINDS.items():
            for tree in trees:
                cpu, loaded = _once(tree, imports)
                samples[str(tree)][kind].append(cpu)
                pandas[str(tree)][kind] = loaded
    return {str(t): {k: {"median_cpu_s": round(statistics.median(v), 3), "samples_s": [round(x, 3) for x in v],
                         "imports_pandas": pandas[str(t)][k]}
                     for k, v in samples[str(t)].items()} for t in trees}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tree", type=Path, action="append", help="a checkout to measure (default: this one)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    trees = [t.resolve() for t in (args.tree or [Path.cwd()])]
    results = measure(trees, args.rounds)
    print(f"{'process':10s}" + "".join(f"{t.name[-18:]:>20s}" for t in trees) + "   (median CPU s, pandas loaded)")
    for kind in KINDS:
        cells = [results[str(t)][kind] for t in trees]
        print(f"{kind:10s}" + "".join(f"{c['median_cpu_s']:>14.3f} {'pd' if c['imports_pandas'] else '  '}   "
                                      for c in cells))
    if args.out:
        args.out.write_text(json.dumps({"rounds": args.rounds, "python": sys.executable, "trees": results}, indent=2))


if __name__ == "__main__":
    main()
