"""Calibration benchmark: `python -m benchmarks.model [--cache-dir DIR]`.

Prints build time and per-call latency for the shapes the calibration measures against, so the cost
figures quoted in the README can be reproduced on any machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rushhour.reference_server.model.build import build_model
from rushhour.reference_server.model.interface import ModelInput
from rushhour.reference_server.model.runtime import load_model
from rushhour.reference_server.model.samples import sample_text
from rushhour.reference_server.model.spec import TIERS

__all__ = ["main"]


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _bench_tier(tier: str, cache: Path, threads: int, repeat: int) -> None:
    model = load_model(tier, cache_dir=cache, intra_op_threads=threads)
    one = [ModelInput(sample_text(200), "en", "de")]
    eight = [ModelInput(sample_text(200, s), "en", "de") for s in range(8)]
    doc = [ModelInput(sample_text(4000), "en", "de")]
    single = _median_ms(lambda: model.translate_batch(one), repeat)
    batch = _median_ms(lambda: model.translate_batch(eight), repeat)
    long_doc = _median_ms(lambda: model.translate_batch(doc), max(1, repeat // 4))
    print(
        f"{tier:8s} provider={model.provider} 200ch x1: {single:6.1f} ms  "
        f"200ch x8: {batch:6.1f} ms ({batch / single:.2f}x)  4000ch x1: {long_doc:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: a fresh temp dir")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache_dir or Path(tmp)
        start = time.perf_counter()
        for tier in TIERS:
            build_model(tier, cache_dir=cache)
        print(f"build both tiers: {time.perf_counter() - start:.2f} s into {cache}")
        for tier in TIERS:
            _bench_tier(tier, cache, args.threads, args.repeat)


if __name__ == "__main__":
    main()
