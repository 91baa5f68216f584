"""Benchmark: how long `rushhour capacity` takes for a 10x bracket to 5%, and how close it lands.

Three targets: the M/D/c ground-truth service (benchmarks/mdc.py, true capacity by simulation),
its streaming form judged on TTFT over the openai-chat protocol (`mdc-stream`), and the embedded
reference server with the promo-day mix. Each run is a real search (Locust, steps, early
stopping); the table gives the wall time, the steps, and for M/D/c the error against the truth.
With --figure the reference server's knee curve (healthy and N-1) is saved as a PNG.

Usage: python -m benchmarks.capacity [--targets mdc,mdc-stream,reference] [--faults none] [--slos all] [--figure F] [--out F]
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import httpx
import yaml

from benchmarks.mdc import true_capacity, true_ttft_capacity
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.capacity.runner import run_capacity
from rushhour.scenarios.cli.capacity import build_job

HERE = Path(__file__).resolve().parent
WORKERS, SERVICE_MS, THRESHOLD_MS = 4, 100.0, 500.0
REFERENCE_SLOS = ("p99-free", "availability")
STREAM_WORKERS, STREAM, TTFT_MS, TTFT_PERCENTILE = 8, (100.0, 10.0, 10), 300.0, 95.0
STEP_S = 30.0
MDC_RANGE = (11.0, 110.0)
"""The M/D/c searches' 10x bracket. Its lowest rate is the lowest at which a default 30 s step holds
the 314 requests a P99 needs to be shown met (10.5 req/s); `rushhour capacity` refuses a lower one."""


def mdc_scenario(url: str, *, streaming: bool = False) -> dict[str, Any]:
    """The scenario a search of the M/D/c service at `url` runs: its P99 (or, streaming, TTFT P95)."""
    scenario: dict[str, Any] = {
        "name": "mdc", "traffic": {"model": "constant:1", "duration": "60s", "seed": 3},
        "target": {"url": url}, "load": {"max_lag_p99_ms": 250},
        "slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": THRESHOLD_MS}]}
    if streaming:
        scenario["name"] = "mdc-stream"
        scenario["target"] = {"url": url, "protocol": "openai-chat", "model": "m", "max_tokens": STREAM[2]}
        scenario["slos"] = [{"name": "ttft", "kind": "ttft", "percentile": TTFT_PERCENTILE, "threshold_ms": TTFT_MS}]
    return scenario


def _mdc(work: Path, *, streaming: bool = False) -> tuple[subprocess.Popen[bytes], Path]:
    port = free_port()
    args = ([str(STREAM_WORKERS), "--stream", *(str(v) for v in STREAM)] if streaming
            else [str(WORKERS), str(SERVICE_MS)])
    proc = subprocess.Popen([sys.executable, str(HERE / "mdc.py"), str(port), *args],
                            stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.post(url, content=b"{}", timeout=1.0, trust_env=False)
            break
        except httpx.HTTPError:
            time.sleep(0.05)
    scenario = mdc_scenario(url, streaming=streaming)
    path = work / f"{scenario['name']}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return proc, path


def _fresh(folder: Path) -> Path:
    """The benchmark's own results folder, emptied: a search never shares a folder with an earlier one."""
    shutil.rmtree(folder, ignore_errors=True)
    return folder


def _search(scenario: str, out: Path, *, slos: tuple[str, ...], faults: str, min_rps: float | None,
            max_rps: float | None, step_s: float, precision: float) -> dict[str, Any]:
    job = build_job(scenario, target_url=None, slos=slos, faults=faults, min_rps=min_rps, max_rps=max_rps,
                    precision=precision, step_s=step_s, require_rps=None, out=out, allow_remote=False, seed=None)
    began = time.monotonic()
    outcome = run_capacity(job, say=lambda text: click.echo(text, err=True))
    wall = time.monotonic() - began
    rows = []
    for condition in outcome.document["conditions"]:
        rows.append({"condition": condition["condition"], "capacity_rps": condition["capacity_rps"],
                     "bracket": condition["bracket"], "steps": len(condition["steps"]),
                     "search_s": condition["wall_s"], "summary": condition["summary"]})
    return {"min_rps": job.settings.min_rps, "max_rps": job.settings.max_rps, "wall_s": round(wall, 1),
            "conditions": rows, "report": str(out / "capacity.html"), "document": outcome.document}


def _figure(document: dict[str, Any], path: Path) -> None:
    from rushhour.reports.capacity.page import knee_chart

    chart = knee_chart(document)
    if chart.png_base64:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(chart.png_base64))


@click.command()
@click.option("--targets", default="mdc,reference", show_default=True,
              help="Comma-separated: mdc, mdc-stream (TTFT over openai-chat), reference.")
@click.option("--faults", default="none", show_default=True, help="Conditions for the reference server.")
@click.option("--step-duration", "step_s", default=STEP_S, show_default=True, help="Measured seconds per step.")
@click.option("--precision", default=0.05, show_default=True, help="Relative precision of the bisection.")
@click.option("--slos", default=",".join(REFERENCE_SLOS), show_default=True,
              help='The reference server\'s SLOs (of promo-day), comma-separated, or "all".')
@click.option("--figure", type=click.Path(path_type=Path), help="Save the reference server's knee curve here.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results/bench-capacity.json"))
def main(targets: str, faults: str, step_s: float, precision: float, slos: str, figure: Path | None,
         out: Path) -> None:
    """A 10x bracket to 5% precision against a known M/D/c service and the reference server."""
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rushhour-bench-capacity-") as tmp:
        work = Path(tmp)
        names = [name.strip() for name in targets.split(",")]
        for name in ("mdc", "mdc-stream"):
            if name not in names:
                continue
            proc, scenario = _mdc(work, streaming=name == "mdc-stream")
            try:
                run = _search(str(scenario), _fresh(out.parent / f"bench-capacity-{name}"), slos=(),
                              faults="none", min_rps=MDC_RANGE[0], max_rps=MDC_RANGE[1], step_s=step_s,
                              precision=precision)
            finally:
                stop_process(proc, grace_s=2.0)
            truth = (true_ttft_capacity(TTFT_MS, workers=STREAM_WORKERS, stream=STREAM, percentile=TTFT_PERCENTILE)
                     if name == "mdc-stream"
                     else true_capacity(THRESHOLD_MS, workers=WORKERS, service_ms=SERVICE_MS))
            found = run["conditions"][0]["capacity_rps"]
            run["truth_rps"] = round(truth, 1)
            run["error"] = None if found is None else round((found - truth) / truth, 4)
            result[name] = run
        if "reference" in names:
            chosen = () if slos == "all" else tuple(name for name in slos.split(",") if name)
            result["reference"] = _search("promo-day", _fresh(out.parent / "bench-capacity-reference"), slos=chosen,
                                          faults=faults, min_rps=None, max_rps=None, step_s=step_s,
                                          precision=precision)
            if figure is not None:
                _figure(result["reference"]["document"], figure)
    click.echo(f"{'target':>10} {'condition':>10} {'bracket':>14} {'capacity':>9} {'steps':>6} {'search s':>9} "
               f"{'truth':>7} {'error':>7}")
    for name, run in result.items():
        for row in run["conditions"]:
            truth = run.get("truth_rps")
            error = run.get("error")
            click.echo(f"{name:>10} {row['condition']:>10} {run['min_rps']:>6.1f}-{run['max_rps']:<7.1f} "
                       f"{row['capacity_rps'] or 0:>9.1f} {row['steps']:>6} {row['search_s']:>9.1f} "
                       f"{truth if truth is not None else '—':>7} {'—' if error is None else f'{100 * error:+.1f}%':>7}")
    out.parent.mkdir(parents=True, exist_ok=True)
    slim = {name: {k: v for k, v in run.items() if k != "document"} for name, run in result.items()}
    out.write_text(json.dumps(slim, indent=2) + "\n")
    click.echo(f"written: {out}" + (f", figure: {figure}" if figure else ""))


if __name__ == "__main__":
    main()
