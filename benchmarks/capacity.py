"""Benchmark: how long `rushhour capacity` takes for a 10x bracket to 5%, and how close it lands.

Three targets: the M/D/c ground-truth service (benchmarks/mdc.py, true capacity by simulation),
its streaming form judged on TTFT over the openai-chat protocol (`mdc-stream`), and the embedded
reference server with the promo-day mix. Each run is a real search (Locust, steps, early
stopping); the table gives the wall time, the steps, and for M/D/c the error against the truth.
With --figure the reference server's knee curve (healthy and N-1) is saved as a PNG.

With --queue md4|md1|mdc the M/D/c target is instead one of the whole-search simulation's
queues (benchmarks/mdc_whole.py: its workers, service time, percentile, threshold and bracket), so
a real search's found/true sits beside the simulated distribution for the same settings. Each
search passes --retry-duration and --drift-check to `rushhour capacity` as given (by default
0 and ends, the searches of the benchmarks page's reference-server table); --plans runs
named option sets in turn (`defaults`: the command's own defaults, the retry growing up to
`RETRY_MAX_S`; `retry-120`: a fixed 120 s retry, as `--retry-max 120s` gives; `no-retry`: no
retry, the machine checked at the ends), --repeats times, each search with its found/true,
minutes, steps, retries, the drift check's verdict and the generator's health.

Usage: python -m benchmarks.capacity [--targets mdc,mdc-stream,reference] [--faults none] [--slos all] [--figure F] [--out F]
       python -m benchmarks.capacity --targets mdc --queue md1 --plans defaults,no-retry --repeats 3 [--seed N] [--out F]
"""

from __future__ import annotations

import base64
import dataclasses
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
from benchmarks.mdc_search import Queue
from benchmarks.mdc_whole import QUEUES
from rushhour.kernel.clock import parse_duration
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.capacity.job import DRIFT_CHECKS, RETRY_MAX_S, RETRY_S, DriftCheck
from rushhour.scenarios.capacity.runner import run_capacity
from rushhour.scenarios.cli.capacity import build_job

HERE = Path(__file__).resolve().parent
WORKERS, SERVICE_MS, THRESHOLD_MS = 4, 100.0, 500.0
REFERENCE_SLOS = ("p99-free", "availability")
STREAM_WORKERS, STREAM, TTFT_MS, TTFT_PERCENTILE = 8, (100.0, 10.0, 10), 300.0, 95.0
STEP_S = 30.0
PLANS: dict[str, tuple[float, float | None, DriftCheck]] = {
    "defaults": (RETRY_S, RETRY_MAX_S, "steps"), "retry-120": (RETRY_S, None, "steps"), "no-retry": (0.0, None, "ends")}
"""Named (shortest retry seconds, longest retry seconds or None for a fixed one, drift check) sets:
`rushhour capacity`'s defaults, a fixed 120 s retry, and no retry with the ends check."""
MDC_RANGE = (11.0, 110.0)
"""The M/D/c searches' 10x bracket. Its lowest rate is the lowest at which a default 30 s step holds
the 314 requests a P99 needs to be shown met (10.5 req/s); `rushhour capacity` refuses a lower one."""


def mdc_scenario(url: str, *, streaming: bool = False, queue: Queue | None = None) -> dict[str, Any]:
    """The scenario a search of the M/D/c service at `url` runs: its P99 (or, streaming, TTFT P95;
    or `queue`'s percentile and threshold)."""
    percentile, threshold = (99.0, THRESHOLD_MS) if queue is None else (queue.percentile, queue.threshold_ms)
    scenario: dict[str, Any] = {
        "name": "mdc", "traffic": {"model": "constant:1", "duration": "60s", "seed": 3},
        "target": {"url": url}, "load": {"max_lag_p99_ms": 250},
        "slos": [{"name": f"p{percentile:g}", "kind": "latency", "percentile": percentile, "threshold_ms": threshold}]}
    if streaming:
        scenario["name"] = "mdc-stream"
        scenario["target"] = {"url": url, "protocol": "openai-chat", "model": "m", "max_tokens": STREAM[2]}
        scenario["slos"] = [{"name": "ttft", "kind": "ttft", "percentile": TTFT_PERCENTILE, "threshold_ms": TTFT_MS}]
    return scenario


def _mdc(work: Path, *, streaming: bool = False, queue: Queue | None = None) -> tuple[subprocess.Popen[bytes], Path]:
    port = free_port()
    args = ([str(STREAM_WORKERS), "--stream", *(str(v) for v in STREAM)] if streaming
            else [str(WORKERS), str(SERVICE_MS)] if queue is None else [str(queue.workers), str(queue.service_ms)])
    proc = subprocess.Popen([sys.executable, str(HERE / "mdc.py"), str(port), *args],
                            stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.post(url, content=b"{}", timeout=1.0, trust_env=False)
            break
        except httpx.HTTPError:
            time.sleep(0.05)
    scenario = mdc_scenario(url, streaming=streaming, queue=queue)
    path = work / f"{scenario['name']}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return proc, path


def _fresh(folder: Path) -> Path:
    """The benchmark's own results folder, emptied: a search never shares a folder with an earlier one."""
    shutil.rmtree(folder, ignore_errors=True)
    return folder


def _search(scenario: str, out: Path, *, slos: tuple[str, ...], faults: str, min_rps: float | None,
            max_rps: float | None, step_s: float, precision: float, retry_s: float = 0.0,
            drift_check: DriftCheck = "ends", seed: int | None = None, retry_max_s: float | None = None
            ) -> dict[str, Any]:
    job = build_job(scenario, target_url=None, slos=slos, faults=faults, min_rps=min_rps, max_rps=max_rps,
                    precision=precision, step_s=step_s, require_rps=None, out=out, allow_remote=False, seed=seed,
                    retry_s=retry_s, retry_max_s=retry_max_s)
    job = dataclasses.replace(job, drift_check=drift_check)
    began = time.monotonic()
    outcome = run_capacity(job, say=lambda text: click.echo(text, err=True))
    wall = time.monotonic() - began
    rows = []
    for condition in outcome.document["conditions"]:
        rows.append({"condition": condition["condition"], "capacity_rps": condition["capacity_rps"],
                     "bracket": condition["bracket"], "steps": len(condition["steps"]),
                     "search_s": condition["wall_s"], "summary": condition["summary"]})
    return {"min_rps": job.settings.min_rps, "max_rps": job.settings.max_rps, "wall_s": round(wall, 1),
            "retry_s": retry_s, "retry_max_s": retry_max_s, "drift_check": drift_check, "exit_code": outcome.exit_code,
            "conditions": rows, "report": str(out / "capacity.html"), "document": outcome.document}


def search_record(document: dict[str, Any], truth: float) -> dict[str, Any]:
    """What one real search of a queue of known capacity came to, from its capacity.json: found/true,
    minutes, steps, retries (steps planned longer than the search's steps), the drift check's
    verdict and the generator's health."""
    condition = document["conditions"][0]
    steps = condition["steps"]
    planned = document["settings"]["step_duration_s"]
    drift = condition.get("machine_drift") or {}
    lags = [s["generator"]["lag_p99_ms"] for s in steps if s["generator"].get("lag_p99_ms") is not None]
    found = condition["capacity_rps"]
    return {"found_rps": found, "truth_rps": round(truth, 1),
            "found_over_true": None if found is None else round(found / truth, 3),
            "minutes": round(condition["wall_s"] / 60.0, 1), "steps": len(steps),
            "retries": sum(1 for s in steps if s.get("planned_s", planned) > planned),
            "drift_flagged": bool(drift.get("changed")), "drift": drift.get("sentence"),
            "confirmed": condition["confirmed"], "generator_bound": condition["generator_bound"],
            "invalid_steps": sum(1 for s in steps if not s["generator"]["valid"]),
            "lag_p99_ms_max": max(lags) if lags else None, "aborted": document.get("aborted"),
            "step_list": [{key: s.get(key) for key in ("index", "offered_rps", "verdict", "planned_s", "measured_s", "reason")}
                          | {"p99_ms": (s.get("latency_ms") or {}).get("p99", {}).get("value"),
                             "lag_p99_ms": s["generator"].get("lag_p99_ms")} for s in steps]}


def _mdc_runs(name: str, work: Path, out: Path, *, queue: Queue | None, plans: list[tuple[str, float, float | None, DriftCheck]],
              step_s: float, precision: float, seed: int | None = None) -> dict[str, Any]:
    """Each plan's search of the M/D/c target `name` in turn, a fresh server and folder for each; with
    `seed`, the k-th search's arrivals drawn from `seed` + k (else every search draws the scenario's)."""
    streaming = name == "mdc-stream"
    truth = (true_ttft_capacity(TTFT_MS, workers=STREAM_WORKERS, stream=STREAM, percentile=TTFT_PERCENTILE)
             if streaming else true_capacity(THRESHOLD_MS, workers=WORKERS, service_ms=SERVICE_MS)
             if queue is None else queue.truth())
    low, high = MDC_RANGE if queue is None else (queue.min_rps, queue.max_rps)
    result: dict[str, Any] = {}
    for k, (plan, retry_s, retry_max_s, drift_check) in enumerate(plans, start=1):
        key = name if len(plans) == 1 else f"{name}-{k}-{plan}"
        proc, scenario = _mdc(work, streaming=streaming, queue=queue)
        try:
            run = _search(str(scenario), _fresh(out.parent / f"bench-capacity-{key}"), slos=(), faults="none",
                          min_rps=low, max_rps=high, step_s=step_s, precision=precision, retry_s=retry_s,
                          drift_check=drift_check, seed=None if seed is None else seed + k, retry_max_s=retry_max_s)
        finally:
            stop_process(proc, grace_s=2.0)
        found = run["conditions"][0]["capacity_rps"]
        run |= {"plan": plan, "seed": run["document"]["settings"]["seed"],
                "queue": None if queue is None else queue.name, "truth_rps": round(truth, 1),
                "error": None if found is None else round((found - truth) / truth, 4),
                "record": search_record(run["document"], truth)}
        click.echo(f"{key}: {json.dumps(run['record'])}", err=True)
        result[key] = run
        _write(out, result)  # each search kept as it ends: a long series stopped midway keeps its runs
    return result


def _write(out: Path, result: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    slim = {name: {k: v for k, v in run.items() if k != "document"} for name, run in result.items()}
    out.write_text(json.dumps(slim, indent=2) + "\n")


def search_plans(names: str | None, retry: str, drift_check: DriftCheck, repeats: int
                 ) -> list[tuple[str, float, float | None, DriftCheck]]:
    """The searches to run, in order: the named plans alternating `repeats` times, or the options
    given (a retry given is a fixed one)."""
    if names is None:
        try:
            return [("given", parse_duration(retry), None, drift_check)] * repeats
        except ValueError as exc:
            raise click.BadParameter(f'"{retry}" is not a duration: {exc}', param_hint="--retry-duration") from exc
    chosen = [name.strip() for name in names.split(",")]
    unknown = [name for name in chosen if name not in PLANS]
    if unknown:
        raise click.BadParameter(f'"{unknown[0]}" is not a plan here ({", ".join(PLANS)}).', param_hint="--plans")
    return [(name, *PLANS[name]) for _ in range(repeats) for name in chosen]


def _figure(document: dict[str, Any], path: Path) -> None:
    from rushhour.reports.capacity.page import knee_chart

    chart = knee_chart(document)
    if chart.png_base64:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(chart.png_base64))


@click.command()
@click.option("--targets", default="mdc,reference", show_default=True,
              help="Comma-separated: mdc, mdc-stream (TTFT over openai-chat), reference.")
@click.option("--queue", type=click.Choice(sorted(QUEUES)), default=None,
              help="The mdc target as this whole-search simulation queue (benchmarks/mdc_whole.py).")
@click.option("--faults", default="none", show_default=True, help="Conditions for the reference server.")
@click.option("--step-duration", "step_s", default=STEP_S, show_default=True, help="Measured seconds per step.")
@click.option("--precision", default=0.05, show_default=True, help="Relative precision of the bisection.")
@click.option("--retry-duration", "retry", default="0", show_default=True,
              help="Passed to each search (0: an open step counts as a failure at once; the command's default is "
                   f"{RETRY_S:g}s, --plans defaults).")
@click.option("--drift-check", "drift_check", type=click.Choice(DRIFT_CHECKS), default="ends", show_default=True,
              help="Passed to each search (the command's default is steps, --plans defaults).")
@click.option("--plans", default=None, help=f"Named option sets run in turn instead ({', '.join(PLANS)}).")
@click.option("--repeats", default=1, show_default=True, type=click.IntRange(min=1, max=20),
              help="How many times the M/D/c searches (each plan in turn) run.")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="The k-th M/D/c search draws its arrivals from this plus k (default: each the scenario's seed).")
@click.option("--slos", default=",".join(REFERENCE_SLOS), show_default=True,
              help='The reference server\'s SLOs (of promo-day), comma-separated, or "all".')
@click.option("--figure", type=click.Path(path_type=Path), help="Save the reference server's knee curve here.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results/bench-capacity.json"))
def main(targets: str, queue: str | None, faults: str, step_s: float, precision: float, retry: str,
         drift_check: DriftCheck, plans: str | None, repeats: int, seed: int | None, slos: str, figure: Path | None, out: Path) -> None:
    """A 10x bracket to 5% precision against a known M/D/c service and the reference server."""
    order = search_plans(plans, retry, drift_check, repeats)
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rushhour-bench-capacity-") as tmp:
        work = Path(tmp)
        names = [name.strip() for name in targets.split(",")]
        for name in ("mdc", "mdc-stream"):
            if name in names:
                result |= _mdc_runs(name, work, out, queue=QUEUES[queue] if queue and name == "mdc" else None,
                                    plans=order, step_s=step_s, precision=precision, seed=seed)
        if "reference" in names:
            chosen = () if slos == "all" else tuple(name for name in slos.split(",") if name)
            result["reference"] = _search("promo-day", _fresh(out.parent / "bench-capacity-reference"), slos=chosen,
                                          faults=faults, min_rps=None, max_rps=None, step_s=step_s,
                                          precision=precision, retry_s=order[0][1], drift_check=order[0][3],
                                          retry_max_s=order[0][2])
            if figure is not None:
                _figure(result["reference"]["document"], figure)
    click.echo(f"{'target':>16} {'condition':>10} {'bracket':>14} {'capacity':>9} {'steps':>6} {'search s':>9} "
               f"{'truth':>7} {'error':>7}")
    for name, run in result.items():
        for row in run["conditions"]:
            truth = run.get("truth_rps")
            error = run.get("error")
            click.echo(f"{name:>16} {row['condition']:>10} {run['min_rps']:>6.1f}-{run['max_rps']:<7.1f} "
                       f"{row['capacity_rps'] or 0:>9.1f} {row['steps']:>6} {row['search_s']:>9.1f} "
                       f"{truth if truth is not None else '—':>7} {'—' if error is None else f'{100 * error:+.1f}%':>7}")
    _write(out, result)
    click.echo(f"written: {out}" + (f", figure: {figure}" if figure else ""))


if __name__ == "__main__":
    main()
