"""`python -m benchmarks.gpu_check [--quick] [--out DIR]`: the reference server on this machine's
accelerator, every figure of docs/gpu.md in one call, written under DIR (default `$OUT`, else
results/gpu-check).

1. `rushhour.reference_server.gpucheck`: the ONNX Runtime builds and providers, each tier's
   provider, precision and IO binding, its translations against the CPU build's (identical, or
   within the fp16 tolerance), the batch-8 gain, one served node against the raw model, the cold
   start (`gpucheck.json`);
2. the quality model's latency and throughput at batch 1, 8, 32 and 64 on the provider in use, and
   the CPU build's at batch 1 and 8 in the same run, so the batching gains compare on one machine
   (`batches.json`);
3. time to first piece and continuous batching's head of line on one served quality node: six
   ~100-character texts alone, then beside a 4,000-character document (`head_of_line.json`);
4. a short `rushhour run` of the smoke scenario, requiring CUDA when the GPU is in use, its report
   in `smoke-run/` and the providers it names (`smoke.json`).

Each part that fails is recorded with its error and the others still run; `gpu_check.json` holds
them all. Without a usable CUDA provider it says "no CUDA provider: CPU figures only" first and
measures the CPU. Exit status 0 when every part ran and every agreement check passed, else 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.batchinglib import HeadOfLine, head_of_line
from benchmarks.serverlib import bench_config, distinct_texts, running_server
from rushhour.reference_server import gpucheck
from rushhour.reference_server.model import load_model
from rushhour.reference_server.model.compare import throughput
from rushhour.reference_server.model.providers import CPU, CUDA, probe

__all__ = ["NO_CUDA", "batch_sweep", "main", "run_parts"]

NO_CUDA = gpucheck.NO_CUDA
BATCH_SIZES = (1, 8, 32, 64)
CPU_BATCH_SIZES = (1, 8)
CPU_RAW_GAIN_2CORE = 4.9  # docs/benchmarks.md: the CPU build's raw batch-8 / batch-1 gain on the 2-core VM
REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "scenarios" / "smoke.yaml"
PROVIDER_NAME = re.compile(r"\b[A-Z][A-Za-z]+ExecutionProvider\b")


def _say(message: str) -> None:
    print(f"gpu_check: {message}", file=sys.stderr, flush=True)


def batch_sweep(sizes: tuple[int, ...], *, chars: int, min_s: float, cache_dir: Path | None,
                providers: list[str] | None = None) -> dict[str, Any]:
    """The quality model's throughput and per-batch latency at each batch size (full batches of
    distinct texts, back to back, at least `min_s` each; each shape's first run not counted)."""
    model = load_model("quality", cache_dir=cache_dir, providers=providers)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        texts = distinct_texts(max(2 * size, 8), chars, start=1000 * size)
        measured = throughput(model, texts, batch_size=size, min_s=min_s)
        rate = measured.requests_per_s
        rows.append({"batch_size": size, "requests_per_s": rate, "batch_latency_ms": 1000.0 * size / rate if rate else None,
                     "requests": measured.requests, "seconds": measured.seconds})
    base = rows[0]["requests_per_s"] or float("nan")
    for row in rows:
        row["gain_vs_batch1"] = row["requests_per_s"] / base
    return {"provider": model.provider, "precision": model.precision, "io_binding": model.plan.io_binding,
            "chars": chars, "rows": rows}


def _batches(quick: bool, cache_dir: Path | None) -> dict[str, Any]:
    min_s = 0.2 if quick else 4.0
    _say(f"batch sweep {BATCH_SIZES} on the provider in use, then the CPU build at {CPU_BATCH_SIZES}")
    served = batch_sweep(BATCH_SIZES, chars=120, min_s=min_s, cache_dir=cache_dir)
    cpu = batch_sweep(CPU_BATCH_SIZES, chars=120, min_s=min_s, cache_dir=cache_dir, providers=[CPU])
    gain8 = {row["batch_size"]: row["gain_vs_batch1"] for row in served["rows"]}.get(8)
    return {"served": served, "cpu": cpu, "gain_batch8": gain8, "cpu_gain_batch8": cpu["rows"][-1]["gain_vs_batch1"],
            "cpu_gain_batch8_2core_vm": CPU_RAW_GAIN_2CORE}


def _head_of_line(quick: bool, cache_dir: Path | None) -> dict[str, Any]:
    rounds = 1 if quick else 5
    _say(f"head of line: one continuous-batching quality node, {rounds} round(s)")
    config = bench_config(max_batch_size=8, threads=1, cache=False, warmup_lengths=[32, 256, 1024])
    config["pools"]["quality"]["batching"] = "continuous"
    if cache_dir is not None:
        config["model_cache_dir"] = str(cache_dir)
    into = HeadOfLine()
    with tempfile.TemporaryDirectory(prefix="gpu-check-hol-") as tmp, running_server(Path(tmp), config) as server:
        with httpx.Client(base_url=server.url, timeout=10.0, trust_env=False) as client:
            provider = client.get("/v1/status").json()["nodes"][0].get("provider")
        for seed in range(1, rounds + 1):
            head_of_line(server, seed=seed, into=into)
    return {"provider": provider, "rounds": rounds, **into.summary()}


def _smoke(out: Path, cuda: bool, quick: bool) -> dict[str, Any]:
    scenario = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    if cuda:
        scenario["target"]["embedded"]["require_provider"] = "cuda"
    path = out / "smoke-scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    results = out / "smoke-run"
    script = Path(sys.executable).with_name("rushhour")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "rushhour.scenarios.cli.main"]
    command += ["run", str(path), "--out", str(results), "--duration", "8s" if quick else "15s"]
    _say("smoke run: " + " ".join(command[-6:]))
    done = subprocess.run(command, capture_output=True, text=True, timeout=420, check=False, cwd=out)
    (out / "smoke-run.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    summary = results / "summary.json"
    report = results / "report.html"
    named = set(PROVIDER_NAME.findall(summary.read_text(encoding="utf-8"))) if summary.exists() else set()
    return {"exit_code": done.returncode, "required_cuda": cuda, "results": str(results),
            "verdict": json.loads(summary.read_text(encoding="utf-8")).get("verdict") if summary.exists() else None,
            "providers_in_summary": sorted(named),
            "providers_in_report": sorted(set(PROVIDER_NAME.findall(report.read_text(encoding="utf-8")))) if report.exists() else []}


def _part(name: str, make: Callable[[], dict[str, Any]], out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        result = make()
    except Exception as exc:  # noqa: BLE001 - one device call: a failed part must not lose the others
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
        _say(f"{name} FAILED: {result['error']}")
    result["elapsed_s"] = time.perf_counter() - started
    (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return result


def run_parts(out: Path, *, quick: bool, cache_dir: Path | None) -> dict[str, Any]:
    """Every part in order; what each measured (or its error) under `out`, and all of it returned."""
    found = probe()
    cuda = found["in_use"] == CUDA
    note = "CUDA in use" if cuda else NO_CUDA
    _say(note)
    base = gpucheck.QUICK if quick else gpucheck.Settings()
    settings = gpucheck.Settings(**{**asdict(base), "model_cache_dir": cache_dir})
    parts: dict[str, Any] = {
        "gpucheck": _part("gpucheck", lambda: gpucheck.run_check(settings), out),
        "batches": _part("batches", lambda: _batches(quick, cache_dir), out),
        "head_of_line": _part("head_of_line", lambda: _head_of_line(quick, cache_dir), out),
        "smoke": _part("smoke", lambda: _smoke(out, cuda, quick), out),
    }
    return {"note": note, "cuda": cuda, "providers": found, "quick": quick,
            "machine": {"python": platform.python_version(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
                        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")},
            "command": "python -m benchmarks.gpu_check " + " ".join(sys.argv[1:]), **parts}


def _fmt(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def render(result: dict[str, Any]) -> str:
    """The summary a person reads first; the figures are all in the JSON files."""
    lines = [result["note"]]
    check = result["gpucheck"]
    if "error" not in check:
        lines += ["", gpucheck.render(check).removeprefix(f"{NO_CUDA}\n")]
    batches = result["batches"]
    if "error" not in batches:
        lines += ["", f"batch sweep, quality on {batches['served']['provider']} ({batches['served']['precision']}):"]
        lines += [f"  batch {r['batch_size']:>2}: {r['requests_per_s']:.1f} req/s, {_fmt(r['batch_latency_ms'])} ms a batch, "
                  f"{r['gain_vs_batch1']:.2f}x batch 1" for r in batches["served"]["rows"]]
        lines.append(f"  CPU build in the same run: batch 8 / batch 1 = {batches['cpu_gain_batch8']:.2f}x "
                     f"(2-core VM: {CPU_RAW_GAIN_2CORE}x)")
    hol = result["head_of_line"]
    if "error" not in hol:
        lines.append(f"head of line on {hol['provider']}: short texts P50 {hol['alone_p50_ms']:.0f} ms alone, "
                     f"{hol['beside_p50_ms']:.0f} ms beside a document ({hol['median_ratio']:.2f}x); "
                     f"first piece P99 alone {hol['alone_ttft_p99_ms']:.0f} ms")
    smoke = result["smoke"]
    if "error" not in smoke:
        lines.append(f"smoke run: exit {smoke['exit_code']}, verdict {smoke['verdict']}, providers named "
                     f"{', '.join(smoke['providers_in_summary']) or 'none'}")
    failed = [name for name in ("gpucheck", "batches", "head_of_line", "smoke") if "error" in result[name]]
    lines.append(f"parts that failed: {', '.join(failed)}" if failed else "every part ran")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short measurements (the CPU test; figures are rough)")
    parser.add_argument("--out", type=Path, default=None, help="where to write (default $OUT, else results/gpu-check)")
    parser.add_argument("--model-cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(os.environ.get("OUT") or "results/gpu-check")
    out.mkdir(parents=True, exist_ok=True)
    result = run_parts(out.resolve(), quick=args.quick, cache_dir=args.model_cache_dir)
    (out / "gpu_check.json").write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(render(result))
    print(f"wrote {out / 'gpu_check.json'}")
    parts_ok = all("error" not in result[name] for name in ("gpucheck", "batches", "head_of_line", "smoke"))
    return 0 if parts_ok and result["gpucheck"].get("ok") and result["smoke"].get("exit_code") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
