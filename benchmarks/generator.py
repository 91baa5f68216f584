"""Benchmark: how fast Locust fires an open-loop schedule and stays valid, per process.

Valid means every scheduled request sent once, send lag P99 under 5 ms, no wait for a pooled
connection (pool wait P99 under 1 ms) and at least 99% answered. Each rate runs with 1 and 2
Locust processes one after the other (side by side, so a busy shared machine loads both alike),
then plain Locust (FastHttpUser, closed loop, no schedule) against the same target, so the cost
of keeping a schedule is visible. The target is nginx when installed (a fixed reply for a few
microseconds of CPU: `benchmarks.generator_nginx`), else a small gevent server. Prints rate vs
lag vs CPU (the busiest process's peak, CPU milliseconds per request across the Locust
processes, and the target's), the 2-vs-1 process ratio and the load average at each run's start;
writes JSON. Usage: python -m benchmarks.generator [--rates 2000,4000,5000,6000] [--processes 1,2]
[--seconds 5] [--target auto|nginx|gevent] [--out F]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import httpx
import numpy as np
import pandas as pd
import psutil

from benchmarks.generator_nginx import nginx_binary, nginx_target
from rushhour.kernel.processes import free_port, stop_process
from rushhour.kernel.quantiles import percentile_value
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.health import generator_figures
from rushhour.scenarios.load.locust import LocustCommand
from rushhour.scenarios.load.session import LoadSession

LAG_LIMIT_MS = 5.0
POOL_WAIT_LIMIT_MS = 1.0
"""A request that really waited for a connection waits a response time; under 1 ms is no wait."""
HERE = Path(__file__).resolve().parent


@contextmanager
def gevent_target() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`benchmarks.generator_target` on a free loopback port (when nginx is not installed)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.generator_target", str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.post(f"{url}/v1/translate", content=b"{}", timeout=1.0)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            raise RuntimeError("The benchmark target did not start.")
        yield url, proc
    finally:
        stop_process(proc, grace_s=10)


def bench_schedule(rate: float, seconds: float) -> pd.DataFrame:
    """`rate` short requests per second, evenly spaced, for `seconds`."""
    n = int(rate * seconds)
    return pd.DataFrame({
        "offset_s": np.arange(n) / rate, "kind": "short", "chars": np.full(n, 20, dtype="int64"),
        "priority": "paid", "mode": "fast", "text_id": np.arange(n, dtype="int64") % 100,
        "tenant": "bench", "phase": "base", "deadline_ms": np.full(n, 5000.0),
    })


def _cpu_s(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def open_loop(url: str, rate: float, seconds: float, work: Path, processes: int = 1,
              target: psutil.Process | None = None) -> dict[str, object]:
    """One open-loop run at `rate` with `processes` Locust processes: achieved send rate, lag,
    connection waits, share answered, the busiest process's CPU, the CPU spent per request by the
    Locust processes and by the target, and the load average when the run began."""
    sched = bench_schedule(rate, seconds)
    path = work / f"schedule-{rate:g}.parquet"
    sched.to_parquet(path, index=False)
    session = LoadSession(LoadSettings(host=url, schedule_path=path, work_dir=work / f"open-{rate:g}-p{processes}",
                                   duration_s=seconds, max_timeout_s=10.0, processes=processes))
    load = round(os.getloadavg()[0], 2)
    cpu: list[float] = []
    cpu_s = 0.0
    try:
        session.start()
        before, target_before = session.cpu_seconds(), _cpu_s(target) if target else 0.0
        while not session.finished():
            time.sleep(0.5)
            cpu.append(session.cpu_percent())
            cpu_s = max(cpu_s, session.cpu_seconds() - before)
        target_s = _cpu_s(target) - target_before if target else float("nan")
    finally:
        session.stop()
    return _row(session.requests(sched), rate, processes, cpu, (cpu_s, target_s), load)


def _row(req: pd.DataFrame, rate: float, processes: int, cpu: list[float],
         cpu_s: tuple[float, float], load: float) -> dict[str, object]:
    lag = ((req["sent_s"] - req["intended_s"]) * 1000.0).dropna()
    span = float(req["sent_s"].max() - req["sent_s"].min()) or 1.0
    sent = int(req["sent_s"].notna().sum())
    health = generator_figures(req)
    row: dict[str, object] = {
        "target_rps": rate, "processes": processes, "scheduled": len(req), "sent": sent,
        "sent_rps": round(sent / span, 1), "lag_p50_ms": round(percentile_value(lag, 50), 2),
        "lag_p99_ms": round(percentile_value(lag, 99), 2), "pool_wait_p99_ms": health["pool_wait_p99_ms"],
        "pool_wait_max_ms": health["pool_wait_max_ms"], "ok_share": round(float(req["ok"].mean()), 4),
        "fired_once": bool((req["fired"] == 1).all()), "cpu_max_pct": round(max(cpu[1:] or [0.0]), 1),
        "cpu_ms_per_request": round(1000.0 * cpu_s[0] / max(sent, 1), 4),
        "target_cpu_ms_per_request": round(1000.0 * cpu_s[1] / max(sent, 1), 4), "load_average": load,
    }
    wait = health["pool_wait_p99_ms"]
    row["valid"] = bool(sent == len(req) and row["fired_once"] and float(row["lag_p99_ms"]) < LAG_LIMIT_MS  # type: ignore[arg-type]
                        and wait is not None and wait < POOL_WAIT_LIMIT_MS and float(row["ok_share"]) > 0.99)  # type: ignore[arg-type]
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


def _sustained(rows: list[dict[str, object]], processes: int) -> float:
    return max((float(r["target_rps"]) for r in rows if r["processes"] == processes and r["valid"]),  # type: ignore[arg-type]
               default=0.0)


def _summary(rows: list[dict[str, object]], plain: dict[str, float] | None, seconds: float, target: str,
             load: tuple[list[float], list[float]]) -> dict[str, object]:
    one = [r for r in rows if r["processes"] == 1]
    two = {r["target_rps"]: r for r in rows if r["processes"] == 2}
    ratios = {f"{r['target_rps']:g}": round(float(two[r["target_rps"]]["sent_rps"]) / float(r["sent_rps"]), 3)  # type: ignore[arg-type]
              for r in one if r["target_rps"] in two and r["sent_rps"]}
    cpu_ms = [float(r["cpu_ms_per_request"]) for r in one if float(r["cpu_ms_per_request"]) > 0]  # type: ignore[arg-type]
    return {"open_loop": rows, "valid_rps_1_process": _sustained(rows, 1),
            "valid_rps_2_processes": _sustained(rows, 2), "sent_rate_ratio_2_vs_1_process": ratios,
            "cpu_bound_rps_one_core": round(1000.0 / min(cpu_ms), 0) if cpu_ms else None,
            "plain_locust_closed_loop": plain, "seconds_per_run": seconds, "target": target,
            "validity": {"lag_p99_ms_below": LAG_LIMIT_MS, "pool_wait_p99_ms_below": POOL_WAIT_LIMIT_MS,
                         "every_request_sent_once": True, "ok_share_above": 0.99},
            "cpus": os.cpu_count(), "load_average_before": load[0], "load_average_after": load[1]}


def _print(result: dict[str, object]) -> None:
    click.echo(f"{'target/s':>9} {'procs':>5} {'sent/s':>8} {'lag p50':>8} {'lag p99':>8} {'wait p99':>8} "
               f"{'ok':>7} {'cpu max%':>8} {'cpu ms/req':>10} {'target ms':>9} {'load':>5} {'valid':>5}")
    for r in result["open_loop"]:  # type: ignore[attr-defined]
        click.echo(f"{r['target_rps']:>9.0f} {r['processes']:>5} {r['sent_rps']:>8.1f} {r['lag_p50_ms']:>8.2f} "
                   f"{r['lag_p99_ms']:>8.2f} {r['pool_wait_p99_ms'] or 0:>8.3f} {r['ok_share']:>7.2%} "
                   f"{r['cpu_max_pct']:>8.1f} {r['cpu_ms_per_request']:>10.4f} {r['target_cpu_ms_per_request']:>9.4f} "
                   f"{r['load_average']:>5.2f} {'yes' if r['valid'] else 'no':>5}")
    click.echo(f"highest valid rate ({result['target']} target): 1 process {result['valid_rps_1_process']:.0f} req/s, "
               f"2 processes {result['valid_rps_2_processes']:.0f} req/s")
    click.echo(f"sent-rate ratio, 2 processes vs 1 (same rate, side by side): {result['sent_rate_ratio_2_vs_1_process']}")
    click.echo(f"CPU per request -> rate one free core could carry: {result['cpu_bound_rps_one_core']} req/s")
    plain = result["plain_locust_closed_loop"]
    if plain:
        click.echo(f"plain Locust FastHttpUser, {plain['users']} users, closed loop: {plain['rps']:.0f} req/s "  # type: ignore[index]
                   f"(p99 {plain['p99_ms']:.0f} ms)")  # type: ignore[index]
    click.echo(f"{result['cpus']} CPUs; load average before {result['load_average_before']}, "
               f"after {result['load_average_after']}")


@contextmanager
def _target(kind: str, work: Path) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    chosen = ("nginx" if nginx_binary() else "gevent") if kind == "auto" else kind
    with (nginx_target(work / "nginx") if chosen == "nginx" else gevent_target()) as (url, proc):
        yield chosen, url, proc


@click.command()
@click.option("--rates", default="2000,4000,5000,6000", help="Open-loop rates to try (requests/s).")
@click.option("--processes", "process_counts", default="1,2", help="Locust process counts, run side by side per rate.")
@click.option("--seconds", default=5.0, help="Length of each run.")
@click.option("--users", default=20, help="Users of the plain Locust baseline (0: skip it).")
@click.option("--target", "target_kind", type=click.Choice(["auto", "nginx", "gevent"]), default="auto",
              help="The loopback target: nginx (cheapest), the gevent server, or nginx when installed.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results/bench-generator.json"))
def main(rates: str, process_counts: str, seconds: float, users: int, target_kind: str, out: Path) -> None:
    """Open-loop rate vs send lag vs CPU per Locust process, vs plain Locust, on one loopback target."""
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="rushhour-bench-") as tmp:
        work = Path(tmp)
        with _target(target_kind, work) as (kind, url, proc):
            target = psutil.Process(proc.pid)
            rows = [open_loop(url, float(r), seconds, work, int(p), target)
                    for r in rates.split(",") for p in process_counts.split(",")]
            plain = plain_locust(url, users, seconds, work) if users else None
    result = _summary(rows, plain, seconds, kind, (load_before, [round(x, 2) for x in os.getloadavg()]))
    _print(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    click.echo(f"written: {out}")


if __name__ == "__main__":
    main()
