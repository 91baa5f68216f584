"""Dynamic vs continuous vs continuous batching with chunked prefill, side by side in one run:
`python -m benchmarks.batching [--quick] [--out F]`.

Three servers, one quality node each (same model, batch limit and threads; the pool's other
settings are the server's defaults), measured in turns, round after round, so that a noisy
shared machine slows all three alike and the ratios compare like with like:

1. head of line: six ~100-character texts alone, then beside a 4,000-character document
   (arriving 100 ms apart while it runs): median and P99 beside / alone, goal <= 2x;
2. saturation: closed-loop clients sending the promo-day mix; characters/s >= dynamic's, each
   request's characters spread over its time and counted for the part inside the window (a
   document still running at the window's end counts for what was done);
3. the promo-day mix (85% short texts, 15% documents of 1-5k chars), Poisson at 70% of dynamic
   batching's saturation rate: short texts' time to first piece P99 <= 3x a solo request's,
   documents' P99 <= 1.2x dynamic's.
Prints a table and writes JSON (default results/bench-batching.json).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from benchmarks.batchinglib import (
    HeadOfLine,
    MixResult,
    closed_mix,
    dumps,
    head_of_line,
    open_mix,
    prefill_profile,
    solo_model_times,
    solo_shorts,
    step_profile,
)
from benchmarks.serverlib import BenchServer, bench_config, running_server

DEFAULT_OUT = Path("results/bench-batching.json")
MODES = ("dynamic", "continuous", "chunked")
LABELS = {"dynamic": "dynamic", "continuous": "continuous", "chunked": "continuous + chunked prefill"}


def _config(mode: str, opts: dict[str, Any]) -> dict[str, Any]:
    config = bench_config(max_batch_size=opts["max_batch_size"], threads=opts["threads"], cache=False,
                          warmup_lengths=[32, 256, 1024])
    pool = config["pools"]["quality"]
    if opts["tier"] != "quality":
        config["pools"] = {"quality": None, opts["tier"]: {**pool, "model": opts["tier"]}}
        pool = config["pools"][opts["tier"]]
    pool["batching"] = "dynamic" if mode == "dynamic" else "continuous"
    if mode == "continuous":
        pool["max_prefill_tokens"] = 0
    elif mode == "chunked" and opts["prefill_tokens"] is not None:
        pool["max_prefill_tokens"] = opts["prefill_tokens"]
    if opts["max_batch_tokens"] is not None:
        pool["max_batch_tokens"] = opts["max_batch_tokens"]
    return config


def _merge(into: MixResult, part: MixResult) -> None:
    for name in ("short_ms", "short_ttft_ms", "doc_ms"):
        getattr(into, name).extend(getattr(part, name))
    into.chars += part.chars
    into.completed_chars += part.completed_chars
    into.errors += part.errors
    into.seconds += part.seconds


def _turns(rounds: int) -> list[tuple[int, str]]:
    """(round, mode) in turns; the order rotates each round so no mode always goes first."""
    return [(r, MODES[(r + i) % len(MODES)]) for r in range(rounds) for i in range(len(MODES))]


def _measure(servers: dict[str, BenchServer], opts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    solo = {mode: MixResult() for mode in MODES}
    hol = {mode: HeadOfLine() for mode in MODES}
    saturated = {mode: MixResult() for mode in MODES}
    mixed = {mode: MixResult() for mode in MODES}
    for r, mode in _turns(opts["rounds"]):
        _merge(solo[mode], solo_shorts(servers[mode], count=opts["solo"] // opts["rounds"], seed=1 + r, mode=opts["tier"]))
    click.echo("head of line ...", err=True)
    for r, mode in _turns(opts["hol_rounds"]):
        head_of_line(servers[mode], seed=100 + r, into=hol[mode], mode=opts["tier"])
    click.echo("saturation ...", err=True)
    for r, mode in _turns(opts["rounds"]):
        _merge(saturated[mode], closed_mix(servers[mode], concurrency=opts["concurrency"], warmup_s=opts["warmup_s"],
                                           duration_s=opts["duration_s"], seed=2 + 10 * r, mode=opts["tier"]))
    rate = 0.7 * saturated["dynamic"].summary()["requests"] / saturated["dynamic"].seconds
    click.echo(f"promo-day mix at {rate:.2f} req/s ...", err=True)
    for r, mode in _turns(opts["rounds"]):
        _merge(mixed[mode], open_mix(servers[mode], rate=rate, duration_s=opts["duration_s"], seed=3 + 10 * r, mode=opts["tier"]))
    return {mode: {"solo": solo[mode].summary(), "head_of_line": hol[mode].summary(),
                   "saturation": {**saturated[mode].summary(), "requests_per_s": _per_s(saturated[mode])},
                   "mixed": mixed[mode].summary(), "mixed_rate": rate} for mode in MODES}


def _per_s(result: MixResult) -> float:
    return result.summary()["requests"] / result.seconds


def _ratios(res: dict[str, Any], dyn: dict[str, Any]) -> dict[str, float]:
    return {
        "short beside a 4,000-char document / alone, median": res["head_of_line"]["median_ratio"],
        "short beside a 4,000-char document / alone, P99": res["head_of_line"]["p99_ratio"],
        "short TTFT P99 under the mix / solo TTFT P99": res["mixed"]["short_ttft_p99_ms"] / res["solo"]["short_ttft_p99_ms"],
        "saturation chars/s / dynamic": res["saturation"]["chars_per_s"] / dyn["saturation"]["chars_per_s"],
        "document P99 under the mix / dynamic": res["mixed"]["doc_p99_ms"] / dyn["mixed"]["doc_p99_ms"],
    }


GOALS = {  # the default configuration's (chunked) goals: limit and sense
    "short beside a 4,000-char document / alone, median": (2.0, "<="),
    "short beside a 4,000-char document / alone, P99": (2.0, "<="),
    "short TTFT P99 under the mix / solo TTFT P99": (3.0, "<="),
    "saturation chars/s / dynamic": (1.0, ">="),
    "document P99 under the mix / dynamic": (1.2, "<="),
}


def _goals(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for mode in MODES:
        for name, value in _ratios(results[mode], results["dynamic"]).items():
            if mode == "dynamic" and name.endswith("/ dynamic"):
                continue
            limit, sense = GOALS[name] if mode == "chunked" else (None, "")
            met = None if limit is None else (value <= limit if sense == "<=" else value >= limit)
            target = None if limit is None else f"{sense} {limit:g}"
            out.append({"mode": mode, "goal": name, "measured": round(value, 3), "target": target, "met": met})
    return out


ROWS = (("solo", "short_p50_ms"), ("solo", "short_ttft_p99_ms"), ("head_of_line", "alone_p50_ms"), ("head_of_line", "beside_p50_ms"),
        ("head_of_line", "beside_p99_ms"), ("head_of_line", "doc_p50_ms"), ("head_of_line", "node_cpu_share_p50"),
        ("mixed", "short_p99_ms"), ("mixed", "short_ttft_p99_ms"), ("mixed", "doc_p99_ms"), ("mixed", "errors"),
        ("saturation", "chars_per_s"), ("saturation", "completed_chars_per_s"), ("saturation", "requests_per_s"))


def _table(results: dict[str, dict[str, Any]], goals: list[dict[str, Any]]) -> str:
    lines = [f"{'':34}" + "".join(f"{mode:>12}" for mode in MODES)]
    for section, key in ROWS:
        lines.append(f"{section + ' ' + key:34}" + "".join(f"{results[mode][section][key]:12.2f}" for mode in MODES))
    lines.append(f"mixed rate (req/s) {results['dynamic']['mixed_rate']:.2f}")
    lines.append("")
    for goal in goals:
        verdict = {True: "met", False: "NOT met", None: ""}[goal["met"]]
        lines.append(f"{goal['mode']:11}{goal['goal']:52}{goal['measured']:>8}  {goal['target'] or '':>6}  {verdict}")
    return "\n".join(lines)


def _machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(), "python": sys.version.split()[0]}


@click.command()
@click.option("--quick", is_flag=True, help="Short windows and one round (a smoke run, noisy figures).")
@click.option("--duration", "duration_s", type=float, default=10.0, show_default=True, help="Seconds per measured window.")
@click.option("--rounds", type=click.IntRange(1), default=2, show_default=True, help="Turns of every mode (solo, saturation, mix).")
@click.option("--hol-rounds", type=click.IntRange(1), default=6, show_default=True, help="Head-of-line rounds per mode.")
@click.option("--max-batch-size", type=int, default=8, show_default=True)
@click.option("--max-batch-tokens", type=int, default=None, help="Default: the server's.")
@click.option("--prefill-tokens", type=int, default=None, help="Chunked prefill budget per step (default: the server's).")
@click.option("--threads", type=int, default=1, show_default=True)
@click.option("--tier", type=click.Choice(["quality", "fast"]), default="quality", show_default=True, help="The model the node serves.")
@click.option("--out", type=click.Path(path_type=Path), default=DEFAULT_OUT, show_default=True)
def main(quick: bool, duration_s: float, rounds: int, hol_rounds: int, max_batch_size: int, max_batch_tokens: int | None,
         prefill_tokens: int | None, threads: int, tier: str, out: Path) -> None:
    """Measure dynamic, continuous and continuous + chunked prefill batching on one node of a tier."""
    opts = {"tier": tier, "max_batch_size": max_batch_size, "max_batch_tokens": max_batch_tokens, "prefill_tokens": prefill_tokens,
            "threads": threads, "concurrency": 16, "warmup_s": 1.0 if quick else 3.0, "duration_s": 4.0 if quick else duration_s,
            "rounds": 1 if quick else rounds, "hol_rounds": 2 if quick else hol_rounds, "solo": 20 if quick else 60}
    machine = {**_machine(), "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    model = {**solo_model_times(threads=threads), **step_profile(threads=threads), **prefill_profile(threads=threads)}
    with tempfile.TemporaryDirectory(prefix="bench-batching-") as tmp, ExitStack() as stack:
        click.echo("starting three servers ...", err=True)
        servers = {mode: stack.enter_context(running_server(Path(tmp) / mode, _config(mode, opts))) for mode in MODES}
        results = _measure(servers, opts)
    machine["load_avg_end"] = os.getloadavg()
    goals = _goals(results)
    click.echo(_table(results, goals))
    out.parent.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks.batching " + " ".join(sys.argv[1:])
    out.write_text(dumps({"command": command.strip(), "machine": machine, "settings": opts, "model": model,
                          "results": results, "goals": goals}))
    click.echo(f"wrote {out}")


if __name__ == "__main__":
    main()
