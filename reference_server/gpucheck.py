"""`python -m rushhour.reference_server.gpucheck [--quick] [--out F]`: is the GPU path really in use, and
what does it give?

Run it on the machine that serves. It reports, for each tier, the execution provider, precision
and data path in use; whether the outputs agree with the CPU build on the same inputs (identical
for the same precision, within `FP16_TOLERANCE` for fp16) and do not depend on batch-mates; the
quality model's batching gain (batch N / batch 1, in-process); one served quality node's
throughput against the raw model's (served/raw); and the cold start of a fresh process to its
first translation. On a CPU-only build it says that CUDA is absent and measures the CPU. It
prints a table, writes JSON, and exits 1 when an agreement check fails (0 otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from rushhour.kernel.atomic import write_json_atomic
from rushhour.reference_server.config import ServerConfig
from rushhour.reference_server.launch import ServerProcess
from rushhour.reference_server.model import TIERS, load_model
from rushhour.reference_server.model.compare import agreement, batch_independence, check_inputs, throughput
from rushhour.reference_server.model.providers import CPU, CUDA, probe
from rushhour.reference_server.model.samples import sample_text

__all__ = ["NO_CUDA", "Settings", "main", "render", "run_check"]

DEFAULT_OUT = Path("results/gpucheck.json")
NO_CUDA = "no CUDA provider: CPU figures only"
UNLIMITED_RATE = 1e6
SERVER_READY_S = 180.0
_COLD_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from rushhour.reference_server.model import ModelInput, load_model
t1 = time.perf_counter()
model = load_model("quality", cache_dir=None if sys.argv[1] == "-" else sys.argv[1])
t2 = time.perf_counter()
model.translate_batch([ModelInput("A cold start, measured to its first translation.", "en", "de")])
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "first_translation_s": t3 - t2, "provider": model.provider}))
"""


@dataclass(frozen=True, kw_only=True)
class Settings:
    max_batch_size: int = 8
    chars: int = 120
    inputs: int = 16
    min_s: float = 5.0
    served_s: float = 10.0
    warmup_s: float = 1.5
    model_cache_dir: Path | None = None


QUICK = Settings(inputs=8, min_s=0.5, served_s=1.5, warmup_s=0.5)


def _progress(message: str) -> None:
    print(f"gpucheck: {message}", file=sys.stderr, flush=True)


def _environment() -> dict[str, Any]:
    found = probe()
    cuda = "in use" if found["in_use"] == CUDA else ("offered but not usable" if CUDA in found["available"] else "absent")  # type: ignore[operator]
    return {**found, "cuda": cuda, "python": platform.python_version(), "machine": platform.machine(), "cpu_count": os.cpu_count()}


def _tier(tier: str, s: Settings) -> dict[str, Any]:
    _progress(f"{tier}: loading the served build and the CPU reference, comparing {s.inputs} inputs")
    model = load_model(tier, cache_dir=s.model_cache_dir)
    reference = load_model(tier, cache_dir=s.model_cache_dir, providers=[CPU])
    inputs = check_inputs(s.inputs)
    agree = agreement(model, reference, inputs)
    independent = batch_independence(model, inputs[: s.max_batch_size])
    return {
        "provider": model.provider, "precision": model.precision, "io_binding": model.plan.io_binding,
        "reference": f"{reference.provider} {reference.precision}", **asdict(agree),
        "batch_independent_share": independent, "ok": agree.ok and independent == 1.0,
    }


def _texts(count: int, chars: int, *, start: int = 0) -> list[str]:
    """Distinct texts of `chars` characters (a numbered prefix), so none repeats another."""
    return [f"{i:07d} " + sample_text(chars - 8, i) for i in range(start, start + count)]


def _batching(s: Settings) -> dict[str, Any]:
    _progress(f"quality: raw throughput at batch {s.max_batch_size} and batch 1, {s.min_s:g} s each")
    model = load_model("quality", cache_dir=s.model_cache_dir)
    texts = _texts(4 * s.max_batch_size, s.chars)
    batched = throughput(model, texts, batch_size=s.max_batch_size, min_s=s.min_s)
    single = throughput(model, texts, batch_size=1, min_s=s.min_s)
    return {"provider": model.provider, "batch_size": s.max_batch_size, "raw_rps": batched.requests_per_s,
            "raw_batch1_rps": single.requests_per_s, "gain": batched.requests_per_s / max(single.requests_per_s, 1e-9)}


def _server_config(s: Settings) -> dict[str, Any]:
    classes = {name: {**c.model_dump(), "rate_per_tenant": UNLIMITED_RATE, "burst_per_tenant": UNLIMITED_RATE, "max_wait_ms": 60_000}
               for name, c in ServerConfig().admission.classes.items()}
    quality = {"model": "quality", "nodes": 1, "max_batch_size": s.max_batch_size, "warmup_lengths": [32, s.chars]}
    config: dict[str, Any] = {"pools": {"quality": quality, "fast": None}, "cache": {"enabled": False},
                              "admission": {"classes": classes, "early_reject": False}}
    if s.model_cache_dir is not None:
        config["model_cache_dir"] = str(s.model_cache_dir)
    return config


async def _closed_loop(url: str, *, concurrency: int, chars: int, warmup_s: float, duration_s: float) -> tuple[int, int]:
    """`concurrency` clients back to back; returns (completed in the window, errors)."""
    counter = iter(range(10**9))
    start = time.perf_counter()
    window = (start + warmup_s, start + warmup_s + duration_s)
    done: list[float] = []
    errors = 0

    async def client_loop(client: httpx.AsyncClient) -> None:
        nonlocal errors
        while time.perf_counter() < window[1]:
            body = {"text": _texts(1, chars, start=next(counter))[0], "source_lang": "en",
                    "target_lang": "de", "mode": "quality", "priority": "paid", "tenant": "gpucheck", "deadline_ms": 60_000}
            try:
                response = await client.post("/v1/translate", json=body)
            except httpx.HTTPError:
                errors += 1
                continue
            if response.status_code == 200:
                done.append(time.perf_counter())
            else:
                errors += 1

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60.0, trust_env=False) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(concurrency)))
    return sum(window[0] <= t < window[1] for t in done), errors


def _served(s: Settings, raw_rps: float, work: Path) -> dict[str, Any]:
    _progress(f"served: one quality node, max batch {s.max_batch_size}, closed loop for {s.served_s:g} s")
    config_path = work / "server.yaml"
    config_path.write_text(yaml.safe_dump(_server_config(s)))
    server = ServerProcess(log_path=work / "server.log", config_path=config_path, env={"RUSHHOUR_STATE_DIR": str(work / "state")})
    started = time.perf_counter()
    try:
        server.start(ready_wait_s=SERVER_READY_S)
        ready_s = time.perf_counter() - started
        with httpx.Client(base_url=server.url, timeout=10.0, trust_env=False) as client:
            node = client.get("/v1/status").json()["nodes"][0]
        completed, errors = asyncio.run(_closed_loop(server.url, concurrency=4 * s.max_batch_size, chars=s.chars,
                                                     warmup_s=s.warmup_s, duration_s=s.served_s))
    finally:
        server.stop()
    served_rps = completed / s.served_s
    return {"provider": node.get("provider"), "served_rps": served_rps, "raw_rps": raw_rps, "ratio": served_rps / max(raw_rps, 1e-9),
            "errors": errors, "server_ready_s": ready_s, "node_cold_start_s": node.get("cold_start_s")}


def _cold_start(s: Settings) -> dict[str, Any]:
    _progress("cold start: a fresh process to its first quality translation")
    started = time.perf_counter()
    cache = str(s.model_cache_dir) if s.model_cache_dir is not None else "-"
    done = subprocess.run([sys.executable, "-c", _COLD_CHILD, cache], capture_output=True, text=True, timeout=300, check=False)
    total = time.perf_counter() - started
    if done.returncode != 0:
        return {"error": f"the cold-start process exited with {done.returncode}: {done.stderr.strip()[-500:]}"}
    return {"total_s": total, **json.loads(done.stdout.strip().splitlines()[-1])}


def run_check(s: Settings) -> dict[str, Any]:
    """Every measurement, in order; the served node is measured last so its load is alone."""
    started = time.perf_counter()
    result: dict[str, Any] = {"settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(s).items()}}
    result["environment"] = _environment()
    for tier in TIERS:
        load_model(tier, cache_dir=s.model_cache_dir)  # builds (once) outside the timed parts
    result["tiers"] = {tier: _tier(tier, s) for tier in TIERS}
    result["batching"] = _batching(s)
    result["cold_start"] = _cold_start(s)
    with tempfile.TemporaryDirectory(prefix="rushhour-gpucheck-") as tmp:
        result["served"] = _served(s, result["batching"]["raw_rps"], Path(tmp))
    result["ok"] = all(t["ok"] for t in result["tiers"].values())
    result["elapsed_s"] = time.perf_counter() - started
    return result


def _fmt(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def _cold_row(cold: dict[str, Any]) -> str:
    if "error" in cold:
        return str(cold["error"])
    return (f"{_fmt(cold.get('total_s'))} s (import {_fmt(cold.get('import_s'))}, load {_fmt(cold.get('load_s'))}, "
            f"first {_fmt(cold.get('first_translation_s'))})")


def render(result: dict[str, Any]) -> str:
    """The table a person reads; every figure is also in the JSON."""
    env, batching, served, cold = result["environment"], result["batching"], result["served"], result["cold_start"]
    rows = [
        ("onnxruntime builds installed", ", ".join(env["installed"]) or "none found"),
        ("providers offered", ", ".join(env["available"])),
        ("CUDA", env["cuda"]),
    ]
    for tier, t in result["tiers"].items():
        rows.append((f"{tier}: provider, precision, IO binding",
                     f"{t['provider']}, {t['precision']}, {'yes' if t['io_binding'] else 'no'}"))
        bound = f"<= {t['tolerance']:g}" if t["tolerance"] else "identical"
        rows.append((f"{tier}: vs {t['reference']}", (f"{t['identical_share']:.0%} identical texts, encoder max rel. error "
                     f"{t['encoder_max_rel_error']:.2g} ({bound}); batch-independent {t['batch_independent_share']:.0%}; "
                     f"{'ok' if t['ok'] else 'FAILED'}")))
    rows += [
        (f"batching gain, raw batch {batching['batch_size']} / batch 1",
         f"{batching['gain']:.2f}x ({batching['raw_rps']:.1f} / {batching['raw_batch1_rps']:.1f} req/s)"),
        ("served / raw, one quality node",
         f"{served['ratio']:.2f}x ({served['served_rps']:.1f} / {served['raw_rps']:.1f} req/s, {served['errors']} errors)"),
        ("cold start to first translation", _cold_row(cold)),
        ("served node: start to ready (warm-up)", f"{_fmt(served.get('node_cold_start_s'))} s"),
        ("check took", f"{result['elapsed_s']:.0f} s; {'all agreement checks ok' if result['ok'] else 'an agreement check FAILED'}"),
    ]
    width = max(len(name) for name, _ in rows)
    table = "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
    return table if env["cuda"] == "in use" else f"{NO_CUDA}\n{table}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rushhour.reference_server.gpucheck", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short measurements (for the test; figures are rough)")
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--model-cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where to write the JSON (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if not 1 <= args.max_batch_size <= 256:
        parser.error(f"--max-batch-size must be between 1 and 256, not {args.max_batch_size}.")
    base = QUICK if args.quick else Settings()
    settings = Settings(**{**asdict(base), "max_batch_size": args.max_batch_size, "model_cache_dir": args.model_cache_dir})
    result = run_check(settings)
    print(render(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(result, args.out)
    print(f"wrote {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
