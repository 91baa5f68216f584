"""The node's model worker: loading, warm-up, cold start bookkeeping, the batch call, and the
slowdown fault (compute time multiplied, as on a throttled GPU)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from reference_server.model import ModelInput, Seq2SeqModel, load_model
from reference_server.node.protocol import parse_slowdown

WARMUP_TEXT = "The quick brown fox jumps over the lazy dog. "


@dataclass
class NodeSettings:
    node_id: str
    pool: str
    tier: str
    max_batch_size: int = 8
    max_queue_delay_ms: float = 10.0
    max_queue: int = 256
    intra_op_threads: int = 1
    warm: bool = True
    warmup_lengths: list[int] = field(default_factory=lambda: [32, 256, 1024])
    model_cache_dir: Path | None = None


class ModelWorker:
    """Owns the model; every method but `state` runs on the batcher's worker thread.

    A warm node loads the model and runs warm-up inferences over its batch and length
    buckets before it reports ready. A cold node reports ready at once and loads the
    model on its first batch, so the first requests pay for the start, as they do when
    a replica is put in service before its caches and kernels are warm.

    `slowdown` (1.0 = full speed) is set from the gateway's slowdown header on every request;
    each batch then sleeps `(slowdown - 1) x its compute time` on the batcher's thread, so the
    node holds the batch slot longer and really serves fewer requests per second. `model`
    serves a given model instead of loading the bundled one (tests, or a real seq2seq model).
    """

    def __init__(self, settings: NodeSettings, *, model: Seq2SeqModel | None = None) -> None:
        self.settings = settings
        self.state = "starting"
        self.provider = "unknown"
        self.model_name = settings.tier
        self.process_started = psutil.Process().create_time()
        self.cold_start_s: float | None = None
        self.first_request_ms: float | None = None
        self._model: Seq2SeqModel | None = model
        self._lock = threading.Lock()
        self.slowdown = 1.0
        if model is not None:
            self.provider, self.model_name = model.provider, model.name

    def slow_down_from(self, header: str | None) -> None:
        """Apply the factor of a request's slowdown header; no header means full speed."""
        self.slowdown = parse_slowdown(header)

    def prepare(self) -> None:
        """Blocking start-up, run off the event loop."""
        if self.settings.warm:
            self.state = "warming"
            self._load()
            self._warm_up()
        self.state = "ready"
        self.cold_start_s = time.time() - self.process_started

    def run_batch(self, inputs: Sequence[ModelInput]) -> list[str]:
        first = self.first_request_ms is None
        started = time.perf_counter()
        if self._model is None:
            self._load()
        computing = time.perf_counter()
        outputs = self._model.translate_batch(inputs)  # type: ignore[union-attr]
        finished = time.perf_counter()
        factor = self.slowdown
        if factor > 1.0:
            time.sleep((factor - 1.0) * (finished - computing))
        if first:
            self.first_request_ms = (time.perf_counter() - started) * 1000.0
        return outputs

    def _load(self) -> None:
        with self._lock:
            if self._model is None:
                self._model = load_model(
                    self.settings.tier,
                    cache_dir=self.settings.model_cache_dir,
                    intra_op_threads=self.settings.intra_op_threads,
                )
                self.provider = self._model.provider
                self.model_name = self._model.name

    def _warm_up(self) -> None:
        assert self._model is not None
        sizes = sorted({1, self.settings.max_batch_size})
        for length in self.settings.warmup_lengths:
            text = (WARMUP_TEXT * (length // len(WARMUP_TEXT) + 1))[:length]
            for size in sizes:
                self._model.translate_batch([ModelInput(text, "en", "de")] * size)
