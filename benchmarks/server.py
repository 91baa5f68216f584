"""Benchmark of the reference server: `python -m benchmarks.server [--quick] [--duration S] [--out F]`.

Measures, in one run, with the compared runs taking turns in rounds so that a neighbour's CPU
use lands on both sides of each ratio:
1. served throughput of one saturated quality node / raw in-process ONNX Runtime throughput of
   the same model, batch limit and thread count;
2. dynamic batching (max batch 8) / `--max-batch-size 1`, same closed-loop client and texts;
3. gateway time on cache hits (server-side `timing.total_ms`) beside the client round trip.
Prints a table with each goal and whether it was met, and writes JSON (default
results/bench-server.json).
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click

from benchmarks.serverlib import (
    BenchServer,
    LoadResult,
    LoadWindow,
    RawModel,
    bench_config,
    cache_hits,
    closed_loop,
    running_server,
    summarise,
)

__all__ = ["Goal", "Settings", "main", "run_bench"]

DEFAULT_OUT = Path("results/bench-server.json")
WARMUP_LENGTHS = [32, 128]


@dataclass(frozen=True)
class Settings:
    max_batch_size: int = 8
    threads: int = 1
    chars: int = 120
    concurrency: int = 32
    duration_s: float = 15.0
    rounds: int = 5
    warmup_s: float = 1.5
    cache_texts: int = 8
    cache_requests: int = 2000


@dataclass(frozen=True)
class Goal:
    name: str
    measured: float
    target: float
    at_least: bool
    unit: str

    @property
    def met(self) -> bool:
        return self.measured >= self.target if self.at_least else self.measured < self.target


def _progress(message: str) -> None:
    click.echo(f"bench: {message}", err=True)


def _served_config(s: Settings) -> dict[str, Any]:
    return bench_config(max_batch_size=s.max_batch_size, threads=s.threads, cache=False, warmup_lengths=WARMUP_LENGTHS)


def _load(s: Settings, server: BenchServer, window_s: float, round_index: int) -> LoadWindow:
    return closed_loop(server, concurrency=s.concurrency, chars=s.chars, warmup_s=s.warmup_s, duration_s=window_s,
                       first_text=round_index * 10**6)


def _cache(s: Settings, work: Path) -> dict[str, Any]:
    config = bench_config(max_batch_size=s.max_batch_size, threads=s.threads, cache=True, warmup_lengths=WARMUP_LENGTHS)
    with running_server(work / "cache", config) as server:
        _progress(f"cache hits: {s.cache_texts} texts, up to {s.cache_requests} sequential requests")
        return asdict(cache_hits(server, texts=s.cache_texts, chars=s.chars, max_requests=s.cache_requests, duration_s=s.duration_s))


def _throughput(s: Settings, work: Path) -> tuple[RawModel, RawModel, LoadResult, LoadResult]:
    """Raw and served runs take turns, round by round, so a neighbour's burst of CPU use falls on
    both sides of each ratio instead of on one measurement."""
    raw = RawModel(batch_size=s.max_batch_size, chars=s.chars, threads=s.threads)
    raw_single = RawModel(batch_size=1, chars=s.chars, threads=s.threads)
    batched: list[LoadWindow] = []
    unbatched: list[LoadWindow] = []
    window_s = s.duration_s / s.rounds
    with ExitStack() as stack:
        _progress(f"starting two servers: one quality node each, max batch {s.max_batch_size} and max batch 1")
        server = stack.enter_context(running_server(work / "batched", _served_config(s)))
        server_single = stack.enter_context(running_server(work / "unbatched", _served_config(s), extra_args=["--max-batch-size", "1"]))
        for i in range(s.rounds):
            _progress(f"round {i + 1}/{s.rounds}: raw, served, served with batch 1, raw batch 1; {window_s:g} s each")
            raw.run(window_s)
            batched.append(_load(s, server, window_s, i))
            unbatched.append(_load(s, server_single, window_s, i))
            raw_single.run(window_s)
    return raw, raw_single, summarise(batched), summarise(unbatched)


def run_bench(s: Settings) -> dict[str, Any]:
    """Every measurement of the benchmark; each compared pair is measured in alternating rounds."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="rushhour-server-bench-") as tmp:
        work = Path(tmp)
        raw, raw_single, batched, unbatched = _throughput(s, work)
        idle = [name for name, load in (("served", batched), ("served with batch 1", unbatched)) if load.completed == 0]
        if idle:
            raise SystemExit(f"bench: no request completed while {' and '.join(idle)} was measured "
                             f"({s.duration_s / s.rounds:g} s windows); give a longer --duration.")
        hits = _cache(s, work)
    return {
        "settings": {**asdict(s), "cpu_count": os.cpu_count(), "loadavg_before": load_before[0], "loadavg_after": os.getloadavg()[0]},
        "throughput": {
            "raw_rps": raw.requests_per_s, "served_rps": batched.requests_per_s,
            "ratio": batched.requests_per_s / raw.requests_per_s, "served": asdict(batched),
            "raw_per_cpu_s": raw.requests / raw.cpu_seconds, "served_per_node_cpu_s": batched.completed / batched.node_cpu_s,
            "cpu_efficiency_ratio": (batched.completed / batched.node_cpu_s) / (raw.requests / raw.cpu_seconds),
        },
        "batching": {
            "batched_rps": batched.requests_per_s, "unbatched_rps": unbatched.requests_per_s,
            "ratio": batched.requests_per_s / unbatched.requests_per_s, "unbatched": asdict(unbatched),
            "unbatched_per_node_cpu_s": unbatched.completed / unbatched.node_cpu_s,
            "cpu_efficiency_ratio": (batched.completed / batched.node_cpu_s) / (unbatched.completed / unbatched.node_cpu_s),
            "raw_batch1_rps": raw_single.requests_per_s, "raw_ceiling_ratio": raw.requests_per_s / raw_single.requests_per_s,
        },
        "cache_hits": hits,
    }


def goals(result: dict[str, Any]) -> list[Goal]:
    hits = result["cache_hits"]
    return [
        Goal("served / raw throughput", result["throughput"]["ratio"], 0.85, True, "x"),
        Goal("batched / unbatched throughput", result["batching"]["ratio"], 3.0, True, "x"),
        Goal("cache hit p50, server total_ms", hits["server_p50_ms"], 1.0, False, "ms"),
        Goal("cache hit p99, server total_ms", hits["server_p99_ms"], 5.0, False, "ms"),
    ]


def _served_row(load: dict[str, Any]) -> str:
    return (
        f"{load['requests_per_s']:.1f}  (p50 {load['latency_p50_ms']:.0f} ms, {load['errors']} errors, "
        f"mean batch {load['mean_batch_size']:.1f}, node busy {load['node_busy_share']:.0%}; CPU node {load['node_cpu_share']:.0%}, "
        f"gateway {load['gateway_cpu_share']:.0%}, client {load['client_cpu_share']:.0%})"
    )


def render(result: dict[str, Any], goal_list: list[Goal]) -> str:
    t, b, h, s = result["throughput"], result["batching"], result["cache_hits"], result["settings"]
    mbs = s["max_batch_size"]
    rows = [
        (f"raw ONNX Runtime, batch {mbs} (req/s)", f"{t['raw_rps']:.1f}"),
        ("raw ONNX Runtime, batch 1 (req/s)", f"{b['raw_batch1_rps']:.1f}"),
        (f"served, 1 node, max batch {mbs} (req/s)", _served_row(t["served"])),
        ("served, 1 node, max batch 1 (req/s)", _served_row(b["unbatched"])),
        (f"model's own batching gain, raw {mbs} / raw 1", f"{b['raw_ceiling_ratio']:.2f}x"),
        ("requests per CPU-second: raw / served node",
         f"{t['raw_per_cpu_s']:.1f} / {t['served_per_node_cpu_s']:.1f} ({t['cpu_efficiency_ratio']:.2f}x)"),
        (f"requests per node CPU-second: batch {mbs} / batch 1",
         f"{t['served_per_node_cpu_s']:.1f} / {b['unbatched_per_node_cpu_s']:.1f} ({b['cpu_efficiency_ratio']:.2f}x)"),
        ("cache hits, server total_ms p50 / p99", f"{h['server_p50_ms']:.3f} / {h['server_p99_ms']:.3f} ms"),
        ("cache hits, client round trip p50 / p99", f"{h['client_p50_ms']:.3f} / {h['client_p99_ms']:.3f} ms"),
        ("cache hits, requests (share answered from cache)", f"{h['requests']} ({h['cached_share']:.0%})"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    lines.append(f"{'machine: cores, 1-min load average before/after':<{width}}  {s['cpu_count']}, "
                 f"{s['loadavg_before']:.2f}/{s['loadavg_after']:.2f}")
    lines += ["", f"{'goal':<32} {'measured':>10} {'target':>10}  met"]
    for g in goal_list:
        target = f"{'>=' if g.at_least else '<'} {g.target:g}{g.unit}"
        lines.append(f"{g.name:<32} {g.measured:>9.3f}{g.unit:<1} {target:>10}  {'met' if g.met else 'not met'}")
    return "\n".join(lines)


@click.command()
@click.option("--quick", is_flag=True, help="Seconds-long windows and few requests (for the test).")
@click.option("--duration", "duration_s", type=click.FloatRange(min=0.5), default=None,
              help="Seconds per measurement, split over the rounds (default 15, quick 2).")
@click.option("--max-batch-size", type=click.IntRange(2, 256), default=8, show_default=True, help="Batch limit of the batched runs.")
@click.option("--out", type=click.Path(path_type=Path), default=DEFAULT_OUT, show_default=True, help="Where to write the JSON.")
def main(quick: bool, duration_s: float | None, max_batch_size: int, out: Path) -> None:
    """Benchmark the reference server against its raw model, with and without batching, and on cache hits."""
    settings = Settings(
        max_batch_size=max_batch_size,
        concurrency=4 * max_batch_size,
        duration_s=duration_s or (2.0 if quick else 15.0),
        rounds=2 if quick else 5,
        warmup_s=0.5 if quick else 1.5,
        cache_requests=100 if quick else 2000,
    )
    result = run_bench(settings)
    goal_list = goals(result)
    result["goals"] = [{**asdict(g), "met": g.met} for g in goal_list]
    click.echo(render(result, goal_list))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    click.echo(f"wrote {out}")


if __name__ == "__main__":
    main()
