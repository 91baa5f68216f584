"""Benchmark: how fast one Locust process fires an open-loop schedule with lag p99 under 5 ms.

Side by side with plain Locust (FastHttpUser, closed loop, no schedule) against the same tiny
loopback target in the same run, so the cost of keeping a schedule is visible. Prints a table
and writes JSON. Usage: python -m benchmarks.generator [--rates 100,200,400] [--seconds 5] [--out F]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import httpx
import numpy as np
import pandas as pd

from traffic_models.processes import free_port, stop_process
from traffic_models.quantiles import percentile_value
from scenarios.load.locust import LocustCommand
from scenarios.load.session import LoadPlan, LoadSession

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


def open_loop(url: str, rate: float, seconds: float, work: Path) -> dict[str, float]:
    """One open-loop run at `rate`: achieved send rate, lag p99, share answered."""
    sched = _schedule(rate, seconds)
    path = work / f"schedule-{rate:g}.parquet"
    sched.to_parquet(path, index=False)
    session = LoadSession(LoadPlan(host=url, schedule_path=path, work_dir=work / f"open-{rate:g}",
                                   duration_s=seconds, max_timeout_s=10.0))
    cpu: list[float] = []
    try:
        session.start()
        while not session.finished():
            time.sleep(0.5)
            cpu.append(session.cpu_percent())
    finally:
        session.stop()
    req = session.requests(sched)
    lag = ((req["sent_s"] - req["intended_s"]) * 1000.0).dropna()
    span = float(req["sent_s"].max() - req["sent_s"].min()) or 1.0
    return {"target_rps": rate, "sent_rps": round(float(req["sent_s"].notna().sum()) / span, 1),
            "lag_p99_ms": round(percentile_value(lag, 99), 2),
            "ok_share": round(float(req["ok"].mean()), 4), "cpu_max_pct": round(max(cpu[1:] or [0.0]), 1)}


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


@click.command()
@click.option("--rates", default="200,400,800,1600,2400", help="Open-loop rates to try (requests/s).")
@click.option("--seconds", default=5.0, help="Length of each run.")
@click.option("--users", default=20, help="Users of the plain Locust baseline.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results/bench-scenarios.json"))
def main(rates: str, seconds: float, users: int, out: Path) -> None:
    """Sustained open-loop rate per Locust process vs plain Locust, on one loopback target."""
    target, url = _start_target()
    try:
        with tempfile.TemporaryDirectory(prefix="rushhour-bench-") as tmp:
            work = Path(tmp)
            rows = [open_loop(url, float(r), seconds, work) for r in rates.split(",")]
            plain = plain_locust(url, users, seconds, work)
    finally:
        stop_process(target, grace_s=10)
    kept = [r["target_rps"] for r in rows if r["lag_p99_ms"] < LAG_LIMIT_MS and r["ok_share"] > 0.99]
    result = {"open_loop": rows, "sustained_rps_lag_p99_under_5ms": max(kept, default=0.0),
              "plain_locust_closed_loop": plain, "seconds_per_run": seconds}
    click.echo(f"{'open loop target':>18} {'sent/s':>8} {'lag p99 ms':>11} {'ok':>7} {'cpu max %':>10}")
    for r in rows:
        click.echo(f"{r['target_rps']:>18.0f} {r['sent_rps']:>8.1f} {r['lag_p99_ms']:>11.2f} "
                   f"{r['ok_share']:>7.2%} {r['cpu_max_pct']:>10.1f}")
    click.echo(f"sustained open-loop rate (lag p99 < {LAG_LIMIT_MS:g} ms): {result['sustained_rps_lag_p99_under_5ms']:.0f} req/s")
    click.echo(f"plain Locust FastHttpUser, {users} users, closed loop: {plain['rps']:.0f} req/s "
               f"(p99 {plain['p99_ms']:.0f} ms)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    click.echo(f"written: {out}")


if __name__ == "__main__":
    main()
