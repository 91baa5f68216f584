"""Where one Locust process spends its CPU while firing an open-loop schedule: a py-spy profile.

Runs one open-loop run against nginx (`benchmarks.generator_nginx`) and samples the Locust
process with py-spy (non-blocking, so the sampling never pauses the generator; idle time in the
event loop's poll is left out). Each sample is put in one bucket by its innermost frame that
belongs to a known part of the send path, so the table reads as "of the generator's busy CPU,
this share went to ...". py-spy itself takes CPU on a small machine: read the shares, not the
rate. Usage: python -m benchmarks.generator_profile [--rate 3000] [--seconds 8] [--out F]
(py-spy must be installed: pip install py-spy).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

import click
import psutil

from benchmarks.generator import bench_schedule
from benchmarks.generator_nginx import nginx_target
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.session import LoadSession

BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("socket calls (gevent wrapper + kernel)", ("gevent/_socket", "/socket.py", "/ssl.py", "gevent/_ssl")),
    ("JSON encode and decode", ("/json/",)),
    ("result rows and part writes (pandas, pyarrow)", ("pandas/", "pyarrow/", "scenarios/generator/partwriter.py")),
    ("connection stamping (handoff)", ("scenarios/generator/handoff.py", "gevent/local")),
    ("HTTP client (geventhttpclient)", ("geventhttpclient/",)),
    ("Locust session, request event and stats", ("locust/",)),
    ("protocol: request body and answer", ("scenarios/protocols/",)),
    ("firer: payload, timers, row record", ("scenarios/generator/", "traffic_models/")),
    ("gevent scheduling (hub, greenlets, timers)", ("gevent/",)),
)


def bucket_of(stack: list[str]) -> str:
    """The bucket of one sampled stack (frames root first): its innermost frame that matches."""
    for frame in reversed(stack):
        for name, patterns in BUCKETS:
            if any(p in frame for p in patterns):
                return name
    return "other (interpreter, stdlib)"


def breakdown(raw: str) -> tuple[dict[str, float], list[tuple[str, float]], int]:
    """Shares by bucket and the top functions by own samples, from py-spy's raw (collapsed) output."""
    buckets: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        if not stack_text or not count_text.isdigit():
            continue
        count = int(count_text)
        stack = stack_text.split(";")
        buckets[bucket_of(stack)] += count
        own[stack[-1]] += count
        total += count
    shares = {name: round(100.0 * n / total, 1) for name, n in buckets.most_common()} if total else {}
    top = [(name, round(100.0 * n / total, 1)) for name, n in own.most_common(25)] if total else []
    return shares, top, total


def _locust_pid() -> int:
    for child in psutil.Process().children(recursive=True):
        try:
            if "locust" in " ".join(child.cmdline()):
                return child.pid
        except psutil.Error:
            continue
    raise RuntimeError("No Locust process found to profile.")


def profile_run(url: str, rate: float, seconds: float, work: Path) -> tuple[str, dict[str, float]]:
    """One open-loop run at `rate` for `seconds`, sampled by py-spy; its raw stacks and run figures."""
    spy = shutil.which("py-spy")
    if spy is None:
        raise click.ClickException("py-spy is not installed; run: pip install py-spy")
    schedule = bench_schedule(rate, seconds)
    path = work / "schedule.parquet"
    schedule.to_parquet(path, index=False)
    session = LoadSession(LoadSettings(host=url, schedule_path=path, work_dir=work / "load", duration_s=seconds,
                                   max_timeout_s=10.0))
    raw_path = work / "profile.txt"
    try:
        session.start()
        cpu_before = session.cpu_seconds()
        sampler = subprocess.Popen([spy, "record", "--pid", str(_locust_pid()), "--nonblocking", "--rate", "250",
                                    "--duration", str(int(seconds)), "--format", "raw", "-o", str(raw_path)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not session.finished():
            time.sleep(0.2)
        cpu_s = session.cpu_seconds() - cpu_before
        sampler.wait(timeout=30)
    finally:
        session.stop()
    requests = session.requests(schedule)
    sent = int(requests["sent_s"].notna().sum())
    lag = (requests["sent_s"] - requests["intended_s"]) * 1000.0
    figures = {"rate": rate, "seconds": seconds, "sent": sent, "cpu_ms_per_request": round(1000.0 * cpu_s / max(sent, 1), 3),
               "lag_p99_ms": round(float(lag.quantile(0.99)), 2)}
    return raw_path.read_text(encoding="utf-8") if raw_path.exists() else "", figures


@click.command()
@click.option("--rate", default=3000.0, help="Scheduled requests per second.")
@click.option("--seconds", default=8.0, help="Length of the run (and of the profile).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results/bench-generator-profile.json"))
def main(rate: float, seconds: float, out: Path) -> None:
    """Profile one Locust process firing an open-loop schedule against nginx."""
    with tempfile.TemporaryDirectory(prefix="rushhour-profile-") as tmp:
        work = Path(tmp)
        with nginx_target(work / "nginx") as (url, _proc):
            raw, figures = profile_run(url, rate, seconds, work)
    shares, top, samples = breakdown(raw)
    click.echo(f"{figures}; {samples} busy samples")
    for name, share in shares.items():
        click.echo(f"{share:6.1f}%  {name}")
    click.echo("top functions by own samples:")
    for name, share in top:
        click.echo(f"{share:6.1f}%  {name}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"run": figures, "samples": samples, "buckets_pct": shares, "top_functions_pct": top},
                              indent=2) + "\n")
    click.echo(f"written: {out}")


if __name__ == "__main__":
    main()
