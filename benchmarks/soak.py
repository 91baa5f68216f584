"""Soak memory: does the harness grow while a drill runs at a steady rate?

Runs `rushhour run scenarios/soak.yaml` (its rate and length overridden) against the null target
(`rushhour.scenarios.run.nullserver`, started here, so its own memory is not counted) and samples the
harness's total resident memory (the `rushhour run` process and every process under it: Locust
and its workers) every few seconds. Prints the samples and the growth after the first minute,
with a least-squares slope extrapolated to an hour and its 95% interval; writes them as JSON.

    python -m benchmarks.soak [--rate 1000] [--duration 4m] [--every 5] [--out docs/data/soak-memory.json]

The overhead check is skipped (RUSHHOUR_NO_OVERHEAD_CHECK) so the drill starts at once.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from scipy import stats

from rushhour.kernel.clock import parse_duration
from rushhour.kernel.processes import free_port, stop_process

ROOT = Path(__file__).resolve().parents[1]
SOAK = ROOT / "scenarios" / "soak.yaml"
WARM_S = 60.0
MB = 1024 * 1024


def rss_by_process(pid: int) -> dict[str, int]:
    """Resident bytes of the drill's own process ("run") and of each process under it, named by
    its executable and PID, so a growth can be traced to the process that grows ({} once it is
    gone); their sum is the harness's total."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return {}
    out = {}
    for proc in procs:
        try:
            out["run" if proc.pid == pid else f"{proc.name()}-{proc.pid}"] = proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return out


def growth(samples: list[tuple[float, int]], load_end_s: float) -> dict[str, Any]:
    """Growth after the first minute and the fitted slope per hour with its 95% interval."""
    t = np.array([s for s, _ in samples])
    rss = np.array([r for _, r in samples], dtype=float) / MB
    keep = (t >= WARM_S) & (t <= load_end_s)
    t, rss = t[keep], rss[keep]
    if t.size < 3:
        raise SystemExit(f"Only {t.size} samples after the first minute; give a longer --duration.")
    fit = stats.linregress(t, rss)
    half = float(stats.t.ppf(0.975, t.size - 2) * fit.stderr)
    return {"samples_after_warm_up": int(t.size), "rss_at_warm_up_mb": round(float(rss[0]), 1),
            "rss_last_mb": round(float(rss[-1]), 1), "rss_max_mb": round(float(rss.max()), 1),
            "growth_after_first_minute_mb": round(float(rss[-1] - rss[0]), 1),
            "slope_mb_per_hour": round(float(fit.slope) * 3600, 1),
            "slope_95_interval_mb_per_hour": [round((float(fit.slope) - half) * 3600, 1),
                                              round((float(fit.slope) + half) * 3600, 1)],
            "fitted_over_s": [float(t[0]), float(t[-1])]}


def run_soak(rate: float, duration: str, every_s: float, workdir: Path) -> dict[str, Any]:
    """Boot the null target, run the drill, sample the harness; return samples and growth."""
    port = free_port()
    target = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.run.nullserver", str(port)], stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None
        target.stdout.readline()  # "ready"
        command = [str(ROOT / ".venv" / "bin" / "rushhour"), "run", str(SOAK), "--target", f"http://127.0.0.1:{port}",
                   "--traffic", f"constant:{rate:g}", "--duration", duration, "--out", str(workdir / "run")]
        env = os.environ | {"RUSHHOUR_NO_OVERHEAD_CHECK": "1"}
        with (workdir / "drill.log").open("w") as log:
            drill = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
            loads: list[float] = []
            by_process = _sample(drill, every_s, loads)
            samples = [(t, sum(procs.values())) for t, procs in by_process]
        summary = json.loads((workdir / "run" / "summary.json").read_text())
        aborts = [e.get("reason") for e in _events(workdir / "run" / "events.jsonl") if e.get("type") == "abort"]
        log_tail = (workdir / "drill.log").read_text(errors="replace").splitlines()[-12:]
        files = {name: (workdir / "run" / name).stat().st_size for name in ("schedule.parquet", "requests.parquet")
                 if (workdir / "run" / name).exists()}
    finally:
        stop_process(target)
    load_end_s = parse_duration(duration)
    return {"command": " ".join(["rushhour", *command[1:]]), "rate_rps": rate, "duration_s": load_end_s,
            "sample_every_s": every_s, "samples": [[round(t, 1), round(r / MB, 1)] for t, r in samples],
            "samples_by_process": [[round(t, 1), {name: round(rss / MB, 1) for name, rss in procs.items()}]
                                   for t, procs in by_process],
            "growth": growth(samples, load_end_s), "exit_code": drill.returncode, "file_bytes": files,
            "aborts": aborts, "drill_log_tail": log_tail, "niceness": os.nice(0),
            "loadavg_1m": {"min": round(min(loads), 2), "median": round(float(np.median(loads)), 2),
                           "max": round(max(loads), 2)} if loads else None,
            "requests": summary.get("requests"), "generator": summary.get("generator")}


def _sample(drill: subprocess.Popen[bytes], every_s: float, loads: list[float]) -> list[tuple[float, dict[str, int]]]:
    """The harness's RSS per process every `every_s` until the drill ends; the 1-minute load
    average beside it (other work on a shared machine shows there, and the RSS is what is judged)."""
    start = time.monotonic()
    samples = []
    while drill.poll() is None:
        samples.append((time.monotonic() - start, rss_by_process(drill.pid)))
        loads.append(os.getloadavg()[0])
        time.sleep(every_s)
    return samples


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--duration", default="4m")
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=Path("results/soak-memory.json"))
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rushhour-soak-") as tmp:
        result = run_soak(args.rate, args.duration, args.every, Path(tmp))
    print(f"{'t (s)':>8}{'harness RSS (MB)':>18}")
    for t, rss in result["samples"]:
        print(f"{t:>8.0f}{rss:>18.1f}")
    g = result["growth"]
    print(f"after the first minute: {g['rss_at_warm_up_mb']} -> {g['rss_last_mb']} MB "
          f"(growth {g['growth_after_first_minute_mb']} MB over {g['fitted_over_s'][1] - g['fitted_over_s'][0]:.0f} s); "
          f"slope {g['slope_mb_per_hour']} MB/h, 95% interval {g['slope_95_interval_mb_per_hour']}")
    print(f"requests {result['requests']}; generator valid {result['generator'] and result['generator'].get('valid')}; "
          f"load average (1 min) over the run {result['loadavg_1m']}; aborts {result['aborts']}")
    scheduled = (result["requests"] or {}).get("scheduled") or 1
    print("bytes per request: " + ", ".join(f"{k} {v / scheduled:.1f}" for k, v in result["file_bytes"].items()))
    document = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.node(),
                "cpu_count": os.cpu_count(), "loadavg_1m_before": round(load_before, 2),
                "bench": "python -m benchmarks.soak " + " ".join(argv if argv is not None else sys.argv[1:]), **result}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
