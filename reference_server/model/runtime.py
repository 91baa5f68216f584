"""Run the bundled model with ONNX Runtime: encode once, then one decoder step per output token.

Where a tier runs, in which precision, and whether it decodes with IO binding is decided by
`providers.plan_session`; on CUDA the decode loop is `binding.BoundDecoder`, on the CPU the
host loop below.

Rows decode a fixed number of steps (`output_tokens`), so cost tracks input length. When rows
finish, the batch is compacted to the rows still running and the memory is trimmed to their
longest source, so a long document does not keep paying for short batch-mates and vice versa.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from .binding import BoundDecoder
from .build import DECODER_FILE, ENCODER_FILE, PREFILL_ATTEND_FILE, PREFILL_PROJECT_FILE, ensure_built
from .interface import ModelInput
from .prefill import ChunkedPrefill
from .providers import (
    CUDA,
    SessionPlan,
    check_in_use,
    plan_session,
    preload_cuda_libraries,
)
from .rows import HostRowDecoder, row_steps
from .spec import ModelSpec, get_spec
from .tokenizer import detokenize, encode_batch, lang_token, piece_table

__all__ = ["OnnxSeq2SeqModel", "choose_providers", "load_model"]


def choose_providers(requested: Sequence[str] | None = None, int8: bool = False) -> list[str]:
    """The providers a tier gets here: CUDA then CPU for a GPU tier when CUDA is offered, else CPU;
    a requested list must name offered providers."""
    return list(plan_session(int8, ort.get_available_providers(), requested=requested).providers)


def _session(path: Path, plan: SessionPlan, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    if plan.wants_cuda:
        options.use_deterministic_compute = True  # same input, same kernels, same output on the GPU too
    return ort.InferenceSession(str(path), sess_options=options, providers=list(plan.providers),
                                provider_options=[dict(o) for o in plan.provider_options])


class OnnxSeq2SeqModel:
    """The bundled encoder + decoder-step pair behind the `Seq2SeqModel` interface."""

    def __init__(self, spec: ModelSpec, directory: Path, plan: SessionPlan, threads: int) -> None:
        self.spec = spec
        self.tier = spec.tier
        self.name = spec.name
        self.directory = directory
        self.plan = plan
        self._encoder = _session(directory / ENCODER_FILE, plan, threads)
        self._decoder = _session(directory / DECODER_FILE, plan, threads)
        self.provider: str = self._decoder.get_providers()[0]
        # What really runs: a fallback to the CPU keeps fp16 graphs, but not the device data path.
        self.device = "cuda" if self.provider == CUDA else "cpu"
        self.precision: str = plan.precision
        self._bound = (
            BoundDecoder(self._encoder, self._decoder, d_model=spec.d_model, device=self.device,
                         providers=plan.providers, provider_options=plan.provider_options)
            if plan.io_binding else None
        )
        self._pieces = piece_table(spec.tgt_vocab)
        self._threads = threads
        self._prefill: ChunkedPrefill | None = None

    def __repr__(self) -> str:
        return f"OnnxSeq2SeqModel(name={self.name!r}, provider={self.provider!r}, precision={self.precision!r})"

    def encode(self, inputs: Sequence[ModelInput]) -> npt.NDArray[np.float32]:
        """The encoder's memory [B, S, D] for `inputs`, on the host (for comparing builds)."""
        ids, mask = encode_batch([i.text for i in inputs], [i.source_lang for i in inputs], self.spec.src_vocab)
        return np.asarray(self._encoder.run(None, {"input_ids": ids, "attention_mask": mask})[0])

    def translate_batch(self, inputs: Sequence[ModelInput]) -> list[str]:
        """Translate every input; the output for one input never depends on the others."""
        if not inputs:
            return []
        steps = np.array([row_steps(i) for i in inputs], dtype=np.int64)
        tokens = self._generate(inputs, steps)
        return [detokenize(row[:n], self._pieces) for row, n in zip(tokens, steps.tolist())]

    def row_decoder(self, max_prefill_tokens: int = 0) -> HostRowDecoder:
        """A decoder for continuous batching over the same sessions (host arrays, on any provider);
        `max_prefill_tokens` > 0 encodes joining rows a chunk per step (chunked prefill)."""
        return HostRowDecoder(self._encoder, self._decoder, d_model=self.spec.d_model, src_vocab=self.spec.src_vocab,
                              pieces=self._pieces, prefill=self._prefill_stages() if max_prefill_tokens else None,
                              max_prefill_tokens=max_prefill_tokens)

    def _prefill_stages(self) -> ChunkedPrefill:
        """The encoder's two chunked-prefill stages, loaded on first use."""
        if self._prefill is None:
            project = _session(self.directory / PREFILL_PROJECT_FILE, self.plan, self._threads)
            attend = _session(self.directory / PREFILL_ATTEND_FILE, self.plan, self._threads)
            self._prefill = ChunkedPrefill(project, attend, d_model=self.spec.d_model, src_vocab=self.spec.src_vocab)
        return self._prefill

    def _generate(
        self, inputs: Sequence[ModelInput], steps: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """Greedy decode; returns [B, max(steps)] token ids (entries past a row's length unused)."""
        if not steps.max():
            return np.zeros((len(inputs), 0), dtype=np.int64)
        texts, langs = [i.text for i in inputs], [i.source_lang for i in inputs]
        ids, mask = encode_batch(texts, langs, self.spec.src_vocab)
        if self._bound is not None:
            return self._bound.generate(ids, mask, [i.target_lang for i in inputs], steps)
        memory = self._encoder.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        out = np.zeros((len(inputs), int(steps.max())), dtype=np.int64)
        rows = np.arange(len(inputs))
        prev = np.array([lang_token(i.target_lang) for i in inputs], dtype=np.int64)
        state = np.zeros((len(inputs), self.spec.d_model), dtype=np.float32)
        lengths = mask.sum(axis=1)
        for t in range(out.shape[1]):
            live = steps[rows] > t
            if not live.all():
                rows, prev, state = rows[live], prev[live], state[live]
                width = int(lengths[rows].max())
                memory = np.ascontiguousarray(memory[live, :width])
                mask = np.ascontiguousarray(mask[live, :width])
            feeds = {"prev_token": prev, "state": state, "memory": memory, "memory_mask": mask}
            prev, state = self._decoder.run(None, feeds)
            out[rows, t] = prev
        return out


def load_model(
    tier: str,
    *,
    cache_dir: Path | None = None,
    providers: Sequence[str] | None = None,
    intra_op_threads: int = 1,
    require: str | None = None,
    available: Sequence[str] | None = None,
) -> OnnxSeq2SeqModel:
    """Build (once) and load tier `tier` as `plan_session` places it: a GPU tier on CUDA in fp16
    when onnxruntime offers CUDA, else on the CPU. `require="cuda"` raises
    ProviderRequirementError when a GPU tier does not really run on CUDA; `available` stands in
    for `ort.get_available_providers()` (tests)."""
    spec = get_spec(tier)
    if intra_op_threads < 1:
        raise ValueError(f"intra_op_threads must be at least 1, got {intra_op_threads!r}.")
    offered = list(ort.get_available_providers() if available is None else available)
    plan = plan_session(spec.int8, offered, requested=providers)
    if not plan.wants_cuda:
        check_in_use(tier, spec.int8, plan.providers[0], require, offered)  # no need to load to know
    else:
        preload_cuda_libraries()
    directory = ensure_built(spec, cache_dir, fp16=plan.precision == "fp16")
    model = OnnxSeq2SeqModel(spec, directory, plan, intra_op_threads)
    check_in_use(tier, spec.int8, model.provider, require, offered)
    return model

