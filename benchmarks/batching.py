"""Dynamic vs continuous batching: `python -m benchmarks.batching [--quick] [--out F]`.

One quality node each (same model, batch limit and threads), the issue's three goals:
1. the promo-day mix (85% short texts, 15% documents of 1-5k chars) at 70% of dynamic
   batching's saturation rate: short-text P99 within 2x of its P99 when sent alone, and
   document P99 no more than 20% above dynamic's;
2. saturation throughput (characters/s) of continuous >= dynamic's;
3. streamed time to first piece, P99 of short texts under the mix <= 3x one solo decode step
   plus the encoder time (both measured in-process).
Prints a table and writes JSON (default results/bench-batching.json).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import click

from benchmarks.batchinglib import (
    closed_mix,
    dumps,
    open_mix,
    solo_model_times,
    solo_shorts,
)
from benchmarks.serverlib import bench_config, running_server

DEFAULT_OUT = Path("results/bench-batching.json")
MODES = ("dynamic", "continuous")


def _config(mode: str, *, max_batch_size: int, threads: int, max_batch_tokens: int) -> dict[str, Any]:
    config = bench_config(max_batch_size=max_batch_size, threads=threads, cache=False, warmup_lengths=[32, 256, 1024])
    config["pools"]["quality"].update(batching=mode, max_batch_tokens=max_batch_tokens)
    return config


def _measure(mode: str, workdir: Path, opts: dict[str, Any], rate: float | None) -> dict[str, Any]:
    """Solo, saturation and (at `rate`, or 70% of this mode's own capacity) the open-loop mix."""
    config = _config(mode, max_batch_size=opts["max_batch_size"], threads=opts["threads"], max_batch_tokens=opts["max_batch_tokens"])
    with running_server(workdir / mode, config) as server:
        solo = solo_shorts(server, count=opts["solo"], seed=1)
        saturated = closed_mix(server, concurrency=opts["concurrency"], warmup_s=opts["warmup_s"], duration_s=opts["duration_s"], seed=2)
        requests = saturated.summary()["requests"]
        capacity = requests / opts["duration_s"]
        mixed = open_mix(server, rate=rate or 0.7 * capacity, duration_s=opts["duration_s"], seed=3)
    return {"solo": solo.summary(), "saturation": {**saturated.summary(), "requests_per_s": capacity},
            "mixed": mixed.summary(), "mixed_rate": rate or 0.7 * capacity}


def _goals(results: dict[str, dict[str, Any]], model: dict[str, float]) -> list[dict[str, Any]]:
    dyn, con = results["dynamic"], results["continuous"]
    ttft_limit = 3 * model["step_ms"] + model["encoder_ms"]
    rows = [
        ("short P99 under mix / alone (continuous)", con["mixed"]["short_p99_ms"] / con["solo"]["short_p99_ms"], 2.0, "<="),
        ("short P99 under mix / alone (dynamic)", dyn["mixed"]["short_p99_ms"] / dyn["solo"]["short_p99_ms"], None, ""),
        ("document P99 continuous / dynamic", con["mixed"]["doc_p99_ms"] / dyn["mixed"]["doc_p99_ms"], 1.2, "<="),
        ("saturation chars/s continuous / dynamic", con["saturation"]["chars_per_s"] / dyn["saturation"]["chars_per_s"], 1.0, ">="),
        ("short TTFT P99 under mix, continuous (ms)", con["mixed"]["short_ttft_p99_ms"], ttft_limit, "<="),
        ("short TTFT P99 under mix, dynamic (ms)", dyn["mixed"]["short_ttft_p99_ms"], None, ""),
    ]
    out = []
    for name, value, limit, sense in rows:
        met = None if limit is None else (value <= limit if sense == "<=" else value >= limit)
        out.append({"goal": name, "measured": round(value, 3), "target": None if limit is None else f"{sense} {limit:.3g}", "met": met})
    return out


def _table(results: dict[str, dict[str, Any]], goals: list[dict[str, Any]], model: dict[str, float]) -> str:
    lines = [f"{'':34}{'dynamic':>12}{'continuous':>12}"]
    for section, key in (("solo", "short_p99_ms"), ("solo", "short_ttft_p99_ms"), ("mixed", "short_p99_ms"), ("mixed", "short_ttft_p99_ms"), ("mixed", "doc_p99_ms"),
                         ("mixed", "errors"), ("saturation", "chars_per_s"), ("saturation", "requests_per_s")):
        values = [results[mode][section][key] for mode in MODES]
        lines.append(f"{section + ' ' + key:34}" + "".join(f"{v:12.1f}" for v in values))
    lines.append(f"mixed rate (req/s) {results['dynamic']['mixed_rate']:.2f}; solo step {model['step_ms']:.2f} ms, "
                 f"encoder {model['encoder_ms']:.2f} ms ({model['chars']:.0f} chars), "
                 f"{model['doc_encoder_ms']:.1f} ms (a 5,000-char document)")
    lines.append("")
    for goal in goals:
        verdict = {True: "met", False: "NOT met", None: "(reference)"}[goal["met"]]
        lines.append(f"{goal['goal']:46}{goal['measured']:>10}  {goal['target'] or '':>8}  {verdict}")
    return "\n".join(lines)


@click.command()
@click.option("--quick", is_flag=True, help="Short windows (a smoke run, noisy figures).")
@click.option("--duration", "duration_s", type=float, default=20.0, show_default=True, help="Seconds per measured window.")
@click.option("--max-batch-size", type=int, default=8, show_default=True)
@click.option("--max-batch-tokens", type=int, default=1600, show_default=True)
@click.option("--threads", type=int, default=1, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=DEFAULT_OUT, show_default=True)
def main(quick: bool, duration_s: float, max_batch_size: int, max_batch_tokens: int, threads: int, out: Path) -> None:
    """Measure dynamic vs continuous batching on one quality node and check the issue's goals."""
    opts = {"max_batch_size": max_batch_size, "max_batch_tokens": max_batch_tokens, "threads": threads, "concurrency": 16,
            "warmup_s": 2.0 if quick else 4.0, "duration_s": 6.0 if quick else duration_s, "solo": 20 if quick else 60}
    model = solo_model_times(threads=threads)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-batching-") as tmp:
        click.echo("dynamic: solo, saturation, mixed at 70% of its capacity ...", err=True)
        results["dynamic"] = _measure("dynamic", Path(tmp), opts, None)
        click.echo("continuous: the same, mixed at the dynamic rate ...", err=True)
        results["continuous"] = _measure("continuous", Path(tmp), opts, results["dynamic"]["mixed_rate"])
    goals = _goals(results, model)
    click.echo(_table(results, goals, model))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps({"settings": opts, "model": model, "results": results, "goals": goals}))
    click.echo(f"wrote {out}")


if __name__ == "__main__":
    main()
