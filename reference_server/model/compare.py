"""Measurements of loaded models that `gpucheck` reports: does a build agree with the CPU
reference, does a row's output depend on its batch-mates, and what does batching buy.

Each function takes loaded models and inputs and returns plain numbers, so the check script
decides what to compare and how to print it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .interface import ModelInput
from .runtime import OnnxSeq2SeqModel
from .samples import sample_text

__all__ = ["FP16_TOLERANCE", "Agreement", "Throughput", "agreement", "batch_independence", "check_inputs", "throughput"]

# fp16 on CUDA is not bit-identical to fp32 on the CPU: its encoder output must lie within this
# share of the reference's largest value; decoded texts may still differ where two tokens are
# nearly tied, and the share that are identical is reported beside it.
FP16_TOLERANCE = 1e-2
TEXT_LENGTHS = (1, 9, 40, 63, 120, 200, 517, 1000)
LANGUAGE_PAIRS = (("en", "de"), ("de", "en"), ("en", "ja"), ("fr", "es"))


def check_inputs(count: int) -> list[ModelInput]:
    """`count` deterministic inputs of varied lengths and language pairs."""
    out = []
    for i in range(count):
        source, target = LANGUAGE_PAIRS[i % len(LANGUAGE_PAIRS)]
        out.append(ModelInput(sample_text(TEXT_LENGTHS[i % len(TEXT_LENGTHS)], salt=i), source, target))
    return out


@dataclass(frozen=True)
class Agreement:
    """A build against the CPU reference on the same inputs."""

    identical_share: float
    encoder_max_rel_error: float
    tolerance: float
    ok: bool


def agreement(model: OnnxSeq2SeqModel, reference: OnnxSeq2SeqModel, inputs: Sequence[ModelInput]) -> Agreement:
    """Same-precision builds must give identical texts; an fp16 build must keep its encoder
    output within FP16_TOLERANCE (relative to the reference's largest value)."""
    texts, expected = model.translate_batch(inputs), reference.translate_batch(inputs)
    identical = sum(a == b for a, b in zip(texts, expected, strict=True)) / len(inputs)
    ours, theirs = model.encode(inputs), reference.encode(inputs)
    error = float(np.max(np.abs(ours - theirs)) / max(float(np.max(np.abs(theirs))), 1e-12))
    if model.precision == reference.precision:
        return Agreement(identical, error, 0.0, identical == 1.0)
    return Agreement(identical, error, FP16_TOLERANCE, error <= FP16_TOLERANCE)


def batch_independence(model: OnnxSeq2SeqModel, inputs: Sequence[ModelInput]) -> float:
    """Share of inputs whose output in one batch equals their output alone (1.0 expected)."""
    together = model.translate_batch(inputs)
    alone = [model.translate_batch([item])[0] for item in inputs]
    return sum(a == b for a, b in zip(together, alone, strict=True)) / len(inputs)


@dataclass(frozen=True)
class Throughput:
    requests: int
    seconds: float

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def throughput(model: OnnxSeq2SeqModel, texts: Sequence[str], *, batch_size: int, min_s: float) -> Throughput:
    """Translate `texts` in full batches of `batch_size`, round after round, for at least `min_s`."""
    batches = [[ModelInput(t, "en", "de") for t in texts[i : i + batch_size]] for i in range(0, len(texts), batch_size)]
    model.translate_batch(batches[0])  # this batch shape's first run is not counted
    done, started = 0, time.perf_counter()
    while True:
        for batch in batches:
            model.translate_batch(batch)
            done += len(batch)
        elapsed = time.perf_counter() - started
        if elapsed >= min_s:
            return Throughput(done, elapsed)
