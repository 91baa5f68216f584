"""`rushhour report` of a very large run: wall time and peak resident memory.

Writes a synthetic results folder (benchmarks.synth) whose requests.parquet holds `--requests`
rows, written a million at a time so the writer stays small, then runs `rushhour report` on it in
a child process and reads the child's peak RSS from the kernel (getrusage). Above
`rushhour.reports.large.LARGE_ROWS` the report takes its narrow path; `--full` forces the whole-table path
(the row limit raised past the run) to show what it would cost.

    python -m benchmarks.report_scale [--requests 10000000] [--full] [--out docs/data/report-scale.json]

Goals: under 30 s and under 2 GiB peak RSS for 10M requests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from benchmarks.synth import make_results, synth_requests

GOAL_S, GOAL_RSS_GIB = 30.0, 2.0
CHUNK = 1_000_000
DURATION_S = 3600.0
FULL = ("import sys; from rushhour.reports import large; large.LARGE_ROWS = 10**12; "
        "from rushhour.scenarios.cli.main import main; sys.argv = ['rushhour', 'report', sys.argv[1]]; main()")


def synthesise(root: Path, rows: int, seed: int = 7) -> Path:
    """A results folder of `rows` requests over an hour, requests.parquet written chunk by chunk."""
    make_results(root, n_requests=1_000, duration_s=DURATION_S, seed=seed)
    writer = None
    rng = np.random.default_rng(seed)
    for start in range(0, rows, CHUNK):
        frame = synth_requests(rng, min(CHUNK, rows - start), DURATION_S, 1.0, 2.0).drop(columns="text_id")
        table = pa.Table.from_pandas(frame, preserve_index=False)
        writer = writer or pq.ParquetWriter(root / "requests.parquet", table.schema)
        writer.write_table(table, row_group_size=250_000)
    if writer is not None:
        writer.close()
    return root


def timed_report(root: Path, *, full: bool) -> dict[str, Any]:
    """Run the report in a child; its wall time, exit code and peak RSS."""
    command = ([sys.executable, "-c", FULL, str(root)] if full
               else [str(Path(sys.executable).parent / "rushhour"), "report", str(root)])
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child waited for
    return {"wall_s": round(wall, 2), "peak_rss_gib": round(peak_kib / 1024**2, 3), "exit_code": done.returncode,
            "stderr_tail": done.stderr[-400:], "path": "full" if full else "narrow (rushhour.reports.large)"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--full", action="store_true", help="force the whole-table report path")
    parser.add_argument("--out", type=Path, default=Path("results/report-scale.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rushhour-report-scale-") as tmp:
        began = time.perf_counter()
        root = synthesise(Path(tmp) / "run", args.requests)
        synth_s = time.perf_counter() - began
        size_mb = (root / "requests.parquet").stat().st_size / 1024**2
        result = timed_report(root, full=args.full)
        summary = json.loads((root / "summary.json").read_text()) if (root / "summary.json").exists() else {}
    met = result["wall_s"] < GOAL_S and result["peak_rss_gib"] < GOAL_RSS_GIB
    print(f"{'requests':>12}{'parquet MB':>12}{'path':>24}{'wall s':>9}{'peak RSS GiB':>14}{'exit':>6}")
    print(f"{args.requests:>12,}{size_mb:>12.0f}{result['path']:>24}{result['wall_s']:>9.1f}"
          f"{result['peak_rss_gib']:>14.2f}{result['exit_code']:>6}")
    print(f"goal < {GOAL_S:g} s and < {GOAL_RSS_GIB:g} GiB: {'met' if met else 'MISSED'}  (synthesis {synth_s:.0f} s, not timed)")
    document = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.node(),
                "cpu_count": os.cpu_count(), "python": platform.python_version(),
                "bench": "python -m benchmarks.report_scale " + " ".join(argv if argv is not None else sys.argv[1:]),
                "requests": args.requests, "parquet_mb": round(size_mb, 1), **result, "met_goal": met,
                "latency_ms": summary.get("latency_ms"), "verdict": summary.get("verdict")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
