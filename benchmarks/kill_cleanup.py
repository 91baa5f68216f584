"""Benchmark: what a drill killed with SIGKILL leaves behind, and for how long.

    python -m benchmarks.kill_cleanup [--repeats 3] [--lease S] [--out F]

Two cases, each repeated. **external**: the reference server runs as the drill's target, apart
from the harness, so it outlives the kill; the drill's Chaos Toolkit experiment (the shipped
`network-partition.json`) blackholes a quality node and holds it for two minutes. Once the
partition is on the server and the load has written its first part file, the `rushhour run`
process and its `chaos run` are both SIGKILLed, so no rollback will ever come. Timed from the
kill: until every process the drill had started is gone, and until the server no longer holds
the partition (its lease, renewed while the drill lived, has lapsed). **embedded**: the same
drill with the embedded server, killed in the same place; timed until the gateway, its nodes,
Locust and the chaos run are all gone. Load goes only to loopback; every drill is bounded (90 s
of traffic, a 3-minute wait at most for each mark).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
import psutil
import yaml

from benchmarks.serverlib import bench_config, running_server
from rushhour.experiments.leases import LEASE_ENV, default_lease_s
from rushhour.kernel.contract import EVENTS_FILE
from rushhour.scenarios.run.rebuild import events_so_far

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = ROOT / "experiments" / "network-partition.json"
TOKEN = "kill-cleanup-benchmark"
HOLD = "120s"
WAIT_S = 180.0
LOOSE_STEADY_STATE = {"RUSHHOUR_SLO_WINDOW_S": "1", "RUSHHOUR_SLO_P99_MS": "60000", "RUSHHOUR_SLO_MAX_ERROR_RATE": "1"}
"""The experiment's steady-state probes made lenient, so the fault is always injected."""
SHORT = {"fraction": 1.0, "chars": {"median": 90, "sigma": 0.7, "min": 5, "max": 800}}
"""Chat-sized texts only: the drill's load matters here only as something running when it dies."""


def _wait(what: str, predicate: Callable[[], Any], *, timeout_s: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not happen within {timeout_s:.0f} s.")


def _scenario(workdir: Path, target: dict[str, Any]) -> Path:
    model = workdir / "short-texts.yaml"
    model.write_text(yaml.safe_dump({"description": "chat-sized texts at a constant rate", "base_rps": 3,
                                     "curve": "flat", "mix": {"kinds": {"short": SHORT}}}))
    spec = {"name": "kill-cleanup", "traffic": {"model": str(model), "duration": "90s", "seed": 5},
            "target": target, "load": {"processes": 1},
            "slos": [{"name": "availability", "kind": "availability", "objective": 0.5}],
            "chaos": [{"at": "00:00:03", "experiment": str(EXPERIMENT), "hold": HOLD, "env": LOOSE_STEADY_STATE}]}
    path = workdir / "kill-cleanup.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _alive(procs: list[psutil.Process]) -> int:
    count = 0
    for proc in procs:
        try:
            count += proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            continue
    return count


def _partitioned(url: str) -> bool:
    status = httpx.get(f"{url}/v1/status", timeout=5.0, trust_env=False).json()
    return any(f.get("kind") == "partition" for n in status["nodes"] for f in n.get("faults", []))


def _kill_one(workdir: Path, target: dict[str, Any], url: str | None) -> dict[str, Any]:
    """One drill, SIGKILLed mid-partition; seconds from the kill to each mark."""
    out = workdir / "results"
    drill = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.cli.main", "run", str(_scenario(workdir, target)),
                              "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def started() -> Any:
            return next((e for e in events_so_far(out / EVENTS_FILE) if e.get("type") == "fault_start"), None)

        start = _wait("the partition's start mark", lambda: started() or drill.poll() is not None)
        if drill.poll() is not None:
            raise RuntimeError(f"rushhour run exited with {drill.returncode} before the partition.")
        if url is not None:
            _wait("the partition on the server", lambda: _partitioned(url))
        _wait("a part file", lambda: list((out / "load" / "parts").glob("part-*.parquet")))
        family = psutil.Process(drill.pid).children(recursive=True)
        os.killpg(int(start["pid"]), signal.SIGKILL)
        drill.kill()
        drill.wait(timeout=10)
        killed = time.monotonic()
        held = url is not None and _partitioned(url)
        _wait("every process of the drill to end", lambda: not _alive(family))
        row = {"processes": len(family), "processes_gone_s": round(time.monotonic() - killed, 2)}
        if url is not None:
            _wait("the lease to heal the partition", lambda: not _partitioned(url))
            row |= {"partition_held_at_kill": held, "fault_healed_s": round(time.monotonic() - killed, 2)}
        return row
    finally:
        if drill.poll() is None:
            drill.kill()
            drill.wait(timeout=10)


def run(repeats: int) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {"external": [], "embedded": []}
    config = bench_config(max_batch_size=4, threads=1, cache=False, warmup_lengths=[32])
    config["pools"]["quality"]["nodes"] = 2
    for attempt in range(repeats):
        with TemporaryDirectory(prefix="kill-cleanup-") as tmp:
            with running_server(Path(tmp) / "server", config) as server:
                rows["external"].append(_kill_one(Path(tmp), {"url": server.url}, server.url))
        with TemporaryDirectory(prefix="kill-cleanup-") as tmp:
            rows["embedded"].append(_kill_one(Path(tmp), {"embedded": {"nodes": 2, "max_batch_size": 4}}, None))
        print(f"kill-cleanup: repeat {attempt + 1}/{repeats}: external {rows['external'][-1]}, "
              f"embedded {rows['embedded'][-1]}", file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lease", type=float, default=None, help=f"The fault lease in seconds ({LEASE_ENV}).")
    parser.add_argument("--out", type=Path, default=Path("results/kill-cleanup.json"))
    args = parser.parse_args(argv)
    if args.repeats < 1 or (args.lease is not None and args.lease <= 0):
        parser.error("--repeats must be at least 1 and --lease positive.")
    os.environ["RUSHHOUR_ADMIN_TOKEN"] = TOKEN  # the server and the drill's experiments share it
    if args.lease is not None:
        os.environ[LEASE_ENV] = f"{args.lease:g}"
    load_before = os.getloadavg()[0]
    rows = run(args.repeats)
    print(f"{'case':<10} {'processes':>9} {'gone after kill (s)':>20} {'fault healed (s)':>17}")
    for case, results in rows.items():
        for row in results:
            healed = f"{row['fault_healed_s']:.1f}" if "fault_healed_s" in row else "-"
            print(f"{case:<10} {row['processes']:>9} {row['processes_gone_s']:>20.2f} {healed:>17}")
    report = {"lease_s": default_lease_s(), "hold": HOLD, "repeats": args.repeats, "cases": rows,
              "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                          "loadavg_1m_before": round(load_before, 2), "loadavg_1m_after": round(os.getloadavg()[0], 2)}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
