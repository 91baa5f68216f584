"""Chunked prefill: a joining request's encoder run a few tokens at a time, between decode steps.

The encoder is cut in two graphs (`graphs.build_prefill_stages`): *project* turns a chunk of
source tokens into their queries, keys and values; *attend* turns a chunk of queries into
memory once every key and value of the source is known. A source of S tokens is therefore 2 x S
token-passes of work, and `ChunkedPrefill.advance` does at most a given number of them per call,
so a decode step that admits a 4,000-character document does a bounded share of its encoder and
the rows already decoding keep producing pieces (as vLLM's chunked prefill and Sarathi-Serve's
stall-free batching do).

The memory is bit-identical to the whole encoder's on the CPU with one intra-op thread: every
matrix product is row-independent, except that ONNX Runtime computes a one-row product by
another kernel whose sums round differently, so no chunk is one token long unless the whole
source is (as it then is in the whole encoder too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from .interface import ModelInput
from .tokenizer import encode_batch

__all__ = ["MIN_BUDGET", "ChunkedPrefill", "Prefill", "chunk_size"]

MIN_BUDGET = 4
MIN_CHUNK = 2


def chunk_size(left: int, budget: int) -> int:
    """Tokens of the next chunk: at most `budget`, never one token out of several, and never
    leaving exactly one behind; 0 when the budget cannot hold a valid chunk."""
    take = min(left, budget)
    if take < left and left - take == 1:
        take -= 1
    if take < MIN_CHUNK and take != left:
        return 0
    return max(take, 0)


@dataclass(eq=False)
class Prefill:
    """One source being encoded: its ids and mask [1, S], the stage outputs so far, its input."""

    item: ModelInput
    ids: npt.NDArray[np.int64]
    mask: npt.NDArray[np.int64]
    q: npt.NDArray[np.float32]
    k: npt.NDArray[np.float32]
    v: npt.NDArray[np.float32]
    memory: npt.NDArray[np.float32]
    projected: int = 0
    attended: int = 0
    chunks: list[int] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return int(self.ids.shape[1])

    @property
    def remaining(self) -> int:
        """Token-passes left: every token through *project*, then through *attend*."""
        return 2 * self.tokens - self.projected - self.attended

    @property
    def done(self) -> bool:
        return self.attended == self.tokens


class ChunkedPrefill:
    """Runs the two encoder stages over chunks of one or more sources within a token budget."""

    def __init__(self, project: ort.InferenceSession, attend: ort.InferenceSession, *, d_model: int,
                 src_vocab: int) -> None:
        self._project = project
        self._attend = attend
        self._d_model = d_model
        self._src_vocab = src_vocab

    def start(self, item: ModelInput) -> Prefill:
        """A source ready to be encoded; no work is done yet."""
        ids, mask = encode_batch([item.text], [item.source_lang], self._src_vocab)
        shape = (1, ids.shape[1], self._d_model)
        q, k, v, memory = (np.zeros(shape, dtype=np.float32) for _ in range(4))
        return Prefill(item, ids, mask, q, k, v, memory)

    def advance(self, prefill: Prefill, budget: int) -> int:
        """Encode at most `budget` token-passes of `prefill`; returns how many were done."""
        used = 0
        while not prefill.done:
            stage_left = prefill.tokens - (prefill.projected if prefill.projected < prefill.tokens else prefill.attended)
            take = chunk_size(stage_left, budget - used)
            if take == 0:
                break
            if prefill.projected < prefill.tokens:
                self._project_chunk(prefill, take)
            else:
                self._attend_chunk(prefill, take)
            prefill.chunks.append(take)
            used += take
        return used

    def _project_chunk(self, prefill: Prefill, take: int) -> None:
        start = prefill.projected
        end = start + take
        q, k, v = self._project.run(None, {"input_ids": prefill.ids[:, start:end], "offset": np.array([start], dtype=np.int64)})
        prefill.q[:, start:end], prefill.k[:, start:end], prefill.v[:, start:end] = q, k, v
        prefill.projected = end

    def _attend_chunk(self, prefill: Prefill, take: int) -> None:
        start = prefill.attended
        end = start + take
        feeds = {"input_ids": prefill.ids[:, start:end], "offset": np.array([start], dtype=np.int64),
                 "q": prefill.q[:, start:end], "k": prefill.k, "v": prefill.v, "attention_mask": prefill.mask,
                 "chunk_mask": prefill.mask[:, start:end]}
        prefill.memory[:, start:end] = self._attend.run(None, feeds)[0]
        prefill.attended = end
