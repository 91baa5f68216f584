"""Run the bundled model with ONNX Runtime: encode once, then one session.run per decode step.

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

from .build import DECODER_FILE, ENCODER_FILE, ensure_built
from .interface import ModelInput
from .spec import ModelSpec, get_spec
from .tokenizer import detokenize, encode_batch, lang_token, output_tokens, piece_table

__all__ = ["OnnxSeq2SeqModel", "choose_providers", "load_model"]

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def choose_providers(requested: Sequence[str] | None = None) -> list[str]:
    """CUDA then CPU when CUDA is offered, else CPU; a requested list must name available EPs."""
    available = ort.get_available_providers()
    if requested is None:
        return [CUDA, CPU] if CUDA in available else [CPU]
    missing = [p for p in requested if p not in available]
    if missing or not requested:
        raise ValueError(
            f"Execution providers {list(requested)!r} are not all available; "
            f"this onnxruntime offers {available!r}."
        )
    return list(requested)


def _session(path: Path, providers: list[str], threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=options, providers=providers)


class OnnxSeq2SeqModel:
    """The bundled encoder + decoder-step pair behind the `Seq2SeqModel` interface."""

    def __init__(
        self, spec: ModelSpec, directory: Path, providers: list[str], threads: int
    ) -> None:
        self.spec = spec
        self.tier = spec.tier
        self.name = spec.name
        self.directory = directory
        self._encoder = _session(directory / ENCODER_FILE, providers, threads)
        self._decoder = _session(directory / DECODER_FILE, providers, threads)
        self.provider: str = self._decoder.get_providers()[0]
        self._pieces = piece_table(spec.tgt_vocab)

    def __repr__(self) -> str:
        return f"OnnxSeq2SeqModel(name={self.name!r}, provider={self.provider!r})"

    def translate_batch(self, inputs: Sequence[ModelInput]) -> list[str]:
        """Translate every input; the output for one input never depends on the others."""
        if not inputs:
            return []
        steps = np.array([output_tokens(len(i.text)) for i in inputs], dtype=np.int64)
        tokens = self._generate(inputs, steps)
        return [detokenize(row[:n], self._pieces) for row, n in zip(tokens, steps.tolist())]

    def _generate(
        self, inputs: Sequence[ModelInput], steps: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """Greedy decode; returns [B, max(steps)] token ids (entries past a row's length unused)."""
        texts, langs = [i.text for i in inputs], [i.source_lang for i in inputs]
        ids, mask = encode_batch(texts, langs, self.spec.src_vocab)
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
) -> OnnxSeq2SeqModel:
    """Build (once) and load tier `tier`; CUDA is used when onnxruntime offers it."""
    spec = get_spec(tier)
    if intra_op_threads < 1:
        raise ValueError(f"intra_op_threads must be at least 1, got {intra_op_threads!r}.")
    directory = ensure_built(spec, cache_dir)
    return OnnxSeq2SeqModel(spec, directory, choose_providers(providers), intra_op_threads)
