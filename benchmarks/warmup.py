"""Benchmark: what a node's warm-up buys on this machine's provider.

For each tier, a node warmed as configured (`warmup_text_lengths`: every length on CUDA, the
shortest on the CPU) and a node warmed at every length, as a CUDA node is, are built in the same
process, one after the other, and each then times its *first* call at each length and batch size, and a
second call at the same shape. A warm-up that leaves nothing to pay shows first calls as fast as
second ones. The two nodes alternate over `--rounds` rounds, so a busy moment hits both alike.

Usage: python -m benchmarks.warmup [--rounds 3] [--out warmup.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from rushhour.reference_server.model.interface import ModelInput
from rushhour.reference_server.model.providers import warmup_batch_sizes
from rushhour.reference_server.node.model_worker import WARMUP_TEXT, ModelWorker, NodeSettings

LENGTHS = [32, 256, 1024]
SHAPES = [(1024, 1), (1024, 8), (256, 8)]


def _text(length: int, salt: str) -> str:
    return (WARMUP_TEXT * (length // len(WARMUP_TEXT) + 1))[:length] + salt


def _node(tier: str, *, every_length: bool) -> dict[str, Any]:
    """Boot one node's model and warm it (as configured, or at every length as a CUDA node does);
    the boot's CPU and each shape's first and second call."""
    worker = ModelWorker(NodeSettings(node_id=f"{tier}-bench", pool=tier, tier=tier, max_batch_size=8,
                                      warmup_lengths=[] if every_length else LENGTHS))
    cpu0 = time.process_time()
    worker.prepare()
    model = worker._model
    assert model is not None
    if every_length:
        for length in LENGTHS:
            for size in warmup_batch_sizes(8, "cpu"):
                model.translate_batch([ModelInput(_text(length, ""), "en", "de")] * size)
    prepare_cpu = time.process_time() - cpu0
    calls: dict[str, list[float]] = {}
    for length, size in SHAPES:
        for attempt in ("first", "second"):
            batch = [ModelInput(_text(length, attempt), "en", "de")] * size
            began = time.perf_counter()
            model.translate_batch(batch)
            calls.setdefault(f"{length}x{size}", []).append(round((time.perf_counter() - began) * 1000.0, 1))
    return {"prepare_cpu_s": round(prepare_cpu, 2), "device": str(getattr(model, "device", "cpu")), "calls_ms": calls}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        for tier in ("quality", "fast"):
            for label, every in (("as configured", False), ("every length", True)):
                node = _node(tier, every_length=every)
                rows.append({"round": round_ + 1, "tier": tier, "warm-up": label, **node})
    print(f"{'tier':8s} {'warm-up':14s} {'device':6s} {'prepare CPU s':>13s}  first / second call ms per shape")
    for tier in ("quality", "fast"):
        for label in ("as configured", "every length"):
            mine = [r for r in rows if r["tier"] == tier and r["warm-up"] == label]
            cpu = statistics.median(r["prepare_cpu_s"] for r in mine)
            shapes = "  ".join(
                f"{shape}: {statistics.median(r['calls_ms'][shape][0] for r in mine):.0f} / "
                f"{statistics.median(r['calls_ms'][shape][1] for r in mine):.0f}" for shape in mine[0]["calls_ms"])
            print(f"{tier:8s} {label:14s} {mine[0]['device']:6s} {cpu:13.2f}  {shapes}")
    if args.out:
        args.out.write_text(json.dumps({"lengths": LENGTHS, "shapes": SHAPES, "rows": rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
