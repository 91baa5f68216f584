"""The node's model worker: loading, warm-up, cold start bookkeeping, the batch call, the
provider requirement (a node that must run on CUDA exits rather than serve from the CPU), and
the slowdown fault (compute time multiplied, as on a throttled GPU)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from rushhour.reference_server.model import (
    ModelInput,
    ProviderRequirementError,
    Seq2SeqModel,
    load_model,
)
from rushhour.reference_server.model.interface import RowDecoder, StepwiseModel
from rushhour.reference_server.model.providers import (
    REQUIRE_ENV,
    parse_requirement,
    warmup_batch_sizes,
    warmup_text_lengths,
)
from rushhour.reference_server.node.protocol import EXIT_REFUSED, parse_slowdown

WARMUP_TEXT = "The quick brown fox jumps over the lazy dog. "
SLOWDOWN_QUANTUM_S = 0.005  # continuous batching sleeps its slowdown debt in slices at least this long


def _required_provider() -> str | None:
    """The gateway passes `require_provider` to its nodes through the environment they inherit."""
    return parse_requirement(os.environ.get(REQUIRE_ENV))


@dataclass
class NodeSettings:
    node_id: str
    pool: str
    tier: str
    max_batch_size: int = 8
    max_queue_delay_ms: float = 10.0
    batching: str = "dynamic"
    max_batch_tokens: int = 4096
    max_prefill_tokens: int = 0
    max_queue: int = 256
    intra_op_threads: int = 1
    warm: bool = True
    warmup_lengths: list[int] = field(default_factory=lambda: [32, 256, 1024])
    model_cache_dir: Path | None = None
    require_provider: str | None = field(default_factory=_required_provider)


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

    With `settings.require_provider` ("cuda"), a GPU tier that does not really run on CUDA is not
    served: the node prints why and exits with `EXIT_REFUSED` (through `exit_process`, a seam for
    tests) as soon as it loads the model: at start when warm, on its first batch when cold.
    """

    def __init__(self, settings: NodeSettings, *, model: Seq2SeqModel | None = None,
                 exit_process: Callable[[int], None] = os._exit) -> None:
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
        self._exit_process = exit_process
        self._rows: RowDecoder | None = None
        self._owed_s = 0.0  # slowdown sleep owed by decode steps, paid in SLOWDOWN_QUANTUM_S slices
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

    def decode_step(self, retire: Sequence[int], admit: Sequence[ModelInput]) -> list[tuple[str, bool]]:
        """Continuous batching's model side (see `rushhour.reference_server.continuous`): retire rows,
        admit new ones, run one decode step (with chunked prefill, first a bounded share of the
        joining rows' encoders). Loads the model on a cold node's first step; the
        slowdown fault stretches every step. A failure leaves no rows behind."""
        first = self.first_request_ms is None
        started = time.perf_counter()
        if self._model is None:
            self._load()
        computing = time.perf_counter()
        try:
            rows = self._row_decoder()
            rows.retire(retire)
            rows.admit(admit)
            pieces = [(p.text, p.done) for p in rows.step()] if rows.size else []
        except BaseException:
            self._rows = None
            raise
        self._pay_slowdown((self.slowdown - 1.0) * (time.perf_counter() - computing))
        if first and pieces:
            self.first_request_ms = (time.perf_counter() - started) * 1000.0
        return pieces

    def _pay_slowdown(self, owed_s: float) -> None:
        """Sleep the slowdown a step owes once the debt reaches a slice: one sleep per millisecond
        step would overshoot by a wake-up's delay each time on a busy machine."""
        if owed_s <= 0.0:
            self._owed_s = 0.0
            return
        self._owed_s += owed_s
        if self._owed_s >= SLOWDOWN_QUANTUM_S:
            began = time.perf_counter()
            time.sleep(self._owed_s)
            self._owed_s -= time.perf_counter() - began

    def _row_decoder(self) -> RowDecoder:
        if self._rows is None:
            if not isinstance(self._model, StepwiseModel):
                raise RuntimeError(f"The model {self.model_name!r} cannot decode row by row; serve it with batching: dynamic.")
            self._rows = self._model.row_decoder(self.settings.max_prefill_tokens)
        return self._rows

    def _load(self) -> None:
        with self._lock:
            if self._model is None:
                try:
                    self._model = load_model(
                        self.settings.tier,
                        cache_dir=self.settings.model_cache_dir,
                        intra_op_threads=self.settings.intra_op_threads,
                        require=self.settings.require_provider,
                    )
                except ProviderRequirementError as exc:
                    self._refuse(exc)
                    raise
                self.provider = self._model.provider
                self.model_name = self._model.name

    def _refuse(self, exc: ProviderRequirementError) -> None:
        """Say why on stderr (the gateway's log) and end the process: serving from the CPU
        is exactly what the requirement forbids."""
        self.state = "failed"
        print(f"rushhour node {self.settings.node_id}: refusing to start. {exc}", file=sys.stderr, flush=True)
        self._exit_process(EXIT_REFUSED)

    def _warm_up(self) -> None:
        if self._model is None:
            raise RuntimeError("warm-up needs a loaded model")
        device = str(getattr(self._model, "device", "cpu"))
        sizes = warmup_batch_sizes(self.settings.max_batch_size, device)
        for length in warmup_text_lengths(self.settings.warmup_lengths, device):
            text = (WARMUP_TEXT * (length // len(WARMUP_TEXT) + 1))[:length]
            for size in sizes:
                self._model.translate_batch([ModelInput(text, "en", "de")] * size)
