"""Benchmark: how fast Locust fires an open-loop schedule with lag p99 under 5 ms, per process.

Each rate runs with 1 and 2 Locust processes one after the other (side by side, so a busy shared
machine loads both alike), then plain Locust (FastHttpUser, closed loop, no schedule) against the
same tiny loopback target, so the cost of keeping a schedule is visible. Prints rate vs lag vs
CPU (the busiest process's peak, and CPU milliseconds per request across all processes, which a
busy machine disturbs far less than lag), the 2-vs-1 process ratio and the load average; writes
JSON. Usage: python -m benchmarks.generator [--rates 500,1000,2000,3000,4000] [--processes 1,2]
[--seconds 5] [--out F]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import httpx
import numpy as np
import pandas as pd

from kernel.processes import free_port, stop_process
from kernel.quantiles import percentile_value
from scenarios.load.locust import LocustCommand
from scenarios.load.session import LoadSession
from scenarios.load.settings import LoadSettings

LAG_LIMIT_MS = 5.0
HERE = Path(__file__).resolve().parent


def _start_target() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.generator_target", str(port)])
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.post(f"{url}/v1/translate", content=b"{}", timeout=1.0)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    stop_process(proc, grace_s=0)
    raise RuntimeError("The benchmark target did not start.")


def _schedule(rate: float, seconds: float) -> pd.DataFrame:
    n = int(rate * seconds)
    return pd.DataFrame({
        "offset_s": np.arange(n) / rate, "kind": "short", "chars": np.full(n, 20, dtype="int64"),
        "priority": "paid", "mode": "fast", "text_id": np.arange(n, dtype="int64") % 100,
        "tenant": "bench", "phase": "base", "deadline_ms": np.full(n, 5000.0),
    })


def open_loop(url: str, rate: float, seconds: float, work: Path, processes: int = 1) -> dict[str, float]:
    """One open-loop run at `rate` with `processes` Locust processes: achieved send rate, lag,
    share answered, the busiest process's CPU and the CPU spent per request (all processes)."""
    sched = _schedule(rate, seconds)
    path = work / f"schedule-{rate:g}.parquet"
    sched.to_parquet(path, index=False)
    session = LoadSession(LoadSettings(host=url, schedule_path=path, work_dir=work / f"open-{rate:g}-p{processes}",
                                       duration_s=seconds, max_timeout_s=10.0, processes=processes))
    cpu: list[float] = []
    cpu_s = 0.0
    try:
        session.start()
        before = session.cpu_seconds()
        while not session.finished():
            time.sleep(0.5)
            cpu.append(session.cpu_percent())
            cpu_s = max(cpu_s, session.cpu_seconds() - before)
    finally:
        session.stop()
    req = session.requests(sched)
    lag = ((req["sent_s"] - req["intended_s"]) * 1000.0).dropna()
    span = float(req["sent_s"].max() - req["sent_s"].min()) or 1.0
    sent = int(req["sent_s"].notna().sum())
    row = {"target_rps": rate, "processes": processes, "sent_rps": round(sent / span, 1),
           "lag_p50_ms": round(percentile_value(lag, 50), 2), "lag_p99_ms": round(percentile_value(lag, 99), 2),
           "ok_share": round(float(req["ok"].mean()), 4), "fired_once": bool((req["fired"] == 1).all()),
           "cpu_max_pct": round(max(cpu[1:] or [0.0]), 1),
           "cpu_ms_per_request": round(1000.0 * cpu_s / max(sent, 1), 3)}
    row["valid"] = bool(row["lag_p99_ms"] < LAG_LIMIT_MS and row["ok_share"] > 0.99 and row["fired_once"])
    return row


def plain_locust(url: str, users: int, seconds: float, work: Path) -> dict[str, float]:
    """Plain closed-loop Locust: requests/s it reaches with `users` users and no waiting."""
    prefix = work / "plain"
    cmd = LocustCommand(host=url, processes=1, run_time_s=seconds, locustfile=HERE / "generator_locustfile.py",
                        users=users)
    argv = [*cmd.argv(), "--csv", str(prefix)]
    subprocess.run(argv, cwd=work, capture_output=True, timeout=seconds + 60, check=False)
    stats = pd.read_csv(f"{prefix}_stats.csv")
    total = stats[stats["Name"] == "Aggregated"].iloc[0]
    return {"users": users, "rps": round(float(total["Requests/s"]), 1),
            "p99_ms": float(total["99%"]), "failures": int(total["Failure Count"])}


def _sustained(rows: list[dict[str, float]], processes: int) -> float:
    return max((r["target_rps"] for r in rows if r["processes"] == processes and r["valid"]), default=0.0)


def _summary(rows: list[dict[str, float]], plain: dict[str, float], seconds: float,
             load: tuple[list[float], list[float]]) -> dict[str, object]:
    one = [r for r in rows if r["processes"] == 1]
    two = {r["target_rps"]: r for r in rows if r["processes"] == 2}
    ratios = {f"{r['target_rps']:g}": round(two[r["target_rps"]]["sent_rps"] / r["sent_rps"], 3)
              for r in one if r["target_rps"] in two and r["sent_rps"]}
    cpu_ms = [r["cpu_ms_per_request"] for r in one if r["cpu_ms_per_request"] > 0]
    return {"open_loop": rows, "sustained_rps_lag_p99_under_5ms": _sustained(rows, 1),
            "sustained_rps_lag_p99_under_5ms_2_processes": _sustained(rows, 2),
            "sent_rate_ratio_2_vs_1_process": ratios,
            "cpu_bound_rps_one_core": round(1000.0 / min(cpu_ms), 0) if cpu_ms else None,
            "plain_locust_closed_loop": plain, "seconds_per_run": seconds,
            "cpus": os.cpu_count(), "load_average_before": load[0], "load_average_after": load[1]}


def _print(result: dict[str, object], users: int) -> None:
    click.echo(f"{'target/s':>9} {'procs':>5} {'sent/s':>8} {'lag p50':>8} {'lag p99 ms':>11} {'ok':>7} "
               f"{'cpu max %':>9} {'cpu ms/req':>10} {'valid':>5}")
    for r in result["open_loop"]:  # type: ignore[attr-defined]
        click.echo(f"{r['target_rps']:>9.0f} {r['processes']:>5} {r['sent_rps']:>8.1f} {r['lag_p50_ms']:>8.2f} "
                   f"{r['lag_p99_ms']:>11.2f} {r['ok_share']:>7.2%} {r['cpu_max_pct']:>9.1f} "
                   f"{r['cpu_ms_per_request']:>10.3f} {'yes' if r['valid'] else 'no':>5}")
    click.echo(f"sustained open-loop rate (lag p99 < {LAG_LIMIT_MS:g} ms): 1 process "
               f"{result['sustained_rps_lag_p99_under_5ms']:.0f} req/s, 2 processes "
               f"{result['sustained_rps_lag_p99_under_5ms_2_processes']:.0f} req/s")
    click.echo(f"sent-rate ratio, 2 processes vs 1 (same rate, side by side): {result['sent_rate_ratio_2_vs_1_process']}")
    click.echo(f"CPU per request -> rate one free core could carry: {result['cpu_bound_rps_one_core']} req/s")
    plain = result["plain_locust_closed_loop"]
    click.echo(f"plain Locust FastHttpUser, {users} users, closed loop: {plain['rps']:.0f} req/s "  # type: ignore[index]
               f"(p99 {plain['p99_ms']:.0f} ms)")  # type: ignore[index]
    click.echo(f"{result['cpus']} CPUs; load average before {result['load_average_before']}, "
               f"after {result['load_average_after']}")


@click.command()
@click.option("--rates", default="500,1000,2000,3000,4000", help="Open-loop rates to try (requests/s).")
@click.option("--processes", "process_counts", default="1,2", help="Locust process counts, run side by side per rate.")
@click.option("--seconds", default=5.0, help="Length of each run.")
@click.option("--users", default=20, help="Users of the plain Locust baseline.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results/bench-generator.json"))
def main(rates: str, process_counts: str, seconds: float, users: int, out: Path) -> None:
    """Open-loop rate vs send lag vs CPU per Locust process, vs plain Locust, on one loopback target."""
    load_before = [round(x, 2) for x in os.getloadavg()]
    target, url = _start_target()
    try:
        with tempfile.TemporaryDirectory(prefix="rushhour-bench-") as tmp:
            work = Path(tmp)
            rows = [open_loop(url, float(r), seconds, work, int(p))
                    for r in rates.split(",") for p in process_counts.split(",")]
            plain = plain_locust(url, users, seconds, work)
    finally:
        stop_process(target, grace_s=10)
    result = _summary(rows, plain, seconds, (load_before, [round(x, 2) for x in os.getloadavg()]))
    _print(result, users)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    click.echo(f"written: {out}")


if __name__ == "__main__":
    main()
