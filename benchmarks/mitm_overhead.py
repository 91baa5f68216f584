"""Benchmark: what mitmproxy with rushhour's fault addon costs on the path to a service, with no fault.

A drill through the proxy measures the proxy too: this measures how much. A stand-in service
(tests/support/own_service.py, 8 workers of 5 ms) is loaded by the same closed-loop client
(`--concurrency` requests in flight, `--requests` in all) directly and through `mitmdump` in
reverse mode with the addon loaded; the two paths take turns in every round, so a busy moment of
a shared machine hits both alike. The table gives each path's median throughput, median and P99
latency over the rounds.

Usage: python -m benchmarks.mitm_overhead [--rounds 3] [--requests 1000] [--concurrency 8] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from rushhour.experiments.service.proxy import ADDON
from rushhour.kernel.processes import free_port, stop_process
from tests.support.waiting import wait_for_http

ROOT = Path(__file__).resolve().parents[1]
MITMDUMP = ROOT / ".venv" / "mitmproxy" / "bin" / "mitmdump"


async def _load(url: str, requests: int, concurrency: int) -> dict[str, float]:
    """Send `requests` POSTs, `concurrency` at a time; throughput and latency percentiles."""
    latencies: list[float] = []
    remaining = iter(range(requests))
    async with httpx.AsyncClient(trust_env=False, timeout=30.0,
                                 limits=httpx.Limits(max_connections=concurrency)) as client:
        async def worker() -> None:
            for _ in remaining:
                began = time.perf_counter()
                (await client.post(url, json={"text": "x"})).raise_for_status()
                latencies.append(time.perf_counter() - began)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        took = time.perf_counter() - began
    ms = np.array(latencies) * 1000.0
    return {"rps": requests / took, "p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99))}


def _start(work: Path) -> tuple[list[subprocess.Popen[bytes]], dict[str, str]]:
    upstream, listen = free_port(), free_port()
    service = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "own_service.py"), str(upstream),
                                "8", "5"], stdin=subprocess.DEVNULL)
    proxy = subprocess.Popen(
        [str(MITMDUMP), "-q", "--mode", f"reverse:http://127.0.0.1:{upstream}", "--listen-host", "127.0.0.1",
         "-p", str(listen), "-s", str(ADDON), "--set", f"confdir={work}"], stdin=subprocess.DEVNULL,
        env={**os.environ, "RUSHHOUR_LEASE_DIR": str(work / "leases")})
    urls = {"direct": f"http://127.0.0.1:{upstream}", "via mitmproxy": f"http://127.0.0.1:{listen}"}
    for proc, url in zip((service, proxy), urls.values(), strict=True):
        if not wait_for_http(f"{url}/healthz", timeout_s=30.0, proc=proc):
            raise SystemExit(f"{url} did not answer within 30 s.")
    return [service, proxy], urls


def run(rounds: int, requests: int, concurrency: int) -> dict[str, Any]:
    if not MITMDUMP.exists():
        raise SystemExit(f"{MITMDUMP} is missing; `make mitmproxy` installs it.")
    with tempfile.TemporaryDirectory() as work:
        procs, urls = _start(Path(work))
        try:
            measured: dict[str, list[dict[str, float]]] = {path: [] for path in urls}
            for _ in range(rounds):
                for path, url in urls.items():
                    measured[path].append(asyncio.run(_load(url, requests, concurrency)))
        finally:
            for proc in reversed(procs):
                stop_process(proc, grace_s=5.0)
    medians = {path: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for path, runs in measured.items()}
    return {"rounds": rounds, "requests": requests, "concurrency": concurrency, "service": "8 workers x 5 ms",
            "median": medians, "runs": measured}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = run(args.rounds, args.requests, args.concurrency)
    print(f"{'path':<15} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
    for path, row in result["median"].items():
        print(f"{path:<15} {row['rps']:>8.0f} {row['p50_ms']:>8.1f} {row['p99_ms']:>8.1f}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
