"""Greedy decode with ONNX Runtime IO binding: the encoder's memory and the decoder's state stay
on the session's device from the first step to the last.

Per step only the small things cross to and from the host: the previous tokens and the source
mask in (B and B x S integers), the next tokens out (B integers). When rows finish, a tiny
compaction graph gathers the rows still running and trims the memory on the device, so the
batch shrinks as it does in the host loop of `runtime` without a round trip of the memory.

The same code runs on the CPU provider (device "cpu"), which is how it is tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from .tokenizer import lang_token

__all__ = ["BoundDecoder", "build_compaction"]


def build_compaction(d_model: int) -> bytes:
    """(memory [B,S,D], state [B,D], rows [K], width [1]) -> memory[rows, :width], state[rows]."""
    from .graph_builder import FLOAT, INT64, GraphBuilder  # the onnx package: only when a graph is built

    gb = GraphBuilder("compact-rows")
    memory = gb.input("memory", FLOAT, ["batch", "src_len", d_model])
    state = gb.input("state", FLOAT, ["batch", d_model])
    rows = gb.input("rows", INT64, ["live"])
    width = gb.input("width", INT64, [1])
    kept = gb.op("Gather", [memory, rows], axis=0)
    trimmed = gb.op("Slice", [kept, gb.const([0], "start", np.int64), width, gb.const([1], "axis", np.int64)])
    gb.output(trimmed, "memory_out", FLOAT, ["live", "width", d_model])
    gb.output(gb.op("Gather", [state, rows], axis=0), "state_out", FLOAT, ["live", d_model])
    return gb.model().SerializeToString()


@dataclass
class _Batch:
    """What the decode keeps between steps: device values, host tokens and mask."""

    memory: ort.OrtValue
    state: ort.OrtValue
    mask: npt.NDArray[np.int64]
    prev: npt.NDArray[np.int64]
    rows: npt.NDArray[np.intp]


class BoundDecoder:
    """Runs encoder + decoder-step sessions with their tensors bound on `device` ("cuda"/"cpu")."""

    def __init__(self, encoder: ort.InferenceSession, decoder: ort.InferenceSession, *, d_model: int, device: str,
                 providers: Sequence[str], provider_options: Sequence[dict[str, str]], device_id: int = 0) -> None:
        self._encoder = encoder
        self._decoder = decoder
        self._d_model = d_model
        self._device = device
        self._device_id = device_id
        self._compact = ort.InferenceSession(build_compaction(d_model), providers=list(providers),
                                             provider_options=[dict(o) for o in provider_options])

    def generate(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64], target_langs: list[str],
                 steps: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Greedy decode; returns [B, max(steps)] token ids (entries past a row's length unused)."""
        batch = self._start(ids, mask, target_langs)
        out = np.zeros((len(ids), int(steps.max())), dtype=np.int64)
        lengths = mask.sum(axis=1)
        for t in range(out.shape[1]):
            live = steps[batch.rows] > t
            if not live.all():
                batch = self._shrink(batch, live, int(lengths[batch.rows[live]].max()))
            batch = self._step(batch)
            out[batch.rows, t] = batch.prev
        return out

    def _start(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64], target_langs: list[str]) -> _Batch:
        binding = self._encoder.io_binding()
        binding.bind_cpu_input("input_ids", ids)
        binding.bind_cpu_input("attention_mask", mask)
        binding.bind_output("memory", self._device, self._device_id)
        self._encoder.run_with_iobinding(binding)
        memory = binding.get_outputs()[0]
        zeros = np.zeros((len(ids), self._d_model), dtype=np.float32)
        state = ort.OrtValue.ortvalue_from_numpy(zeros, self._device, self._device_id)
        prev = np.array([lang_token(lang) for lang in target_langs], dtype=np.int64)
        return _Batch(memory, state, mask, prev, np.arange(len(ids)))

    def _shrink(self, batch: _Batch, live: npt.NDArray[np.bool_], width: int) -> _Batch:
        rows, width_in = np.flatnonzero(live).astype(np.int64), np.array([width], dtype=np.int64)
        binding = self._compact.io_binding()  # bound host arrays are kept referenced until the run ends
        binding.bind_ortvalue_input("memory", batch.memory)
        binding.bind_ortvalue_input("state", batch.state)
        binding.bind_cpu_input("rows", rows)
        binding.bind_cpu_input("width", width_in)
        binding.bind_output("memory_out", self._device, self._device_id)
        binding.bind_output("state_out", self._device, self._device_id)
        self._compact.run_with_iobinding(binding)
        memory, state = binding.get_outputs()
        mask = np.ascontiguousarray(batch.mask[live, :width])
        return _Batch(memory, state, mask, batch.prev[live], batch.rows[live])

    def _step(self, batch: _Batch) -> _Batch:
        binding = self._decoder.io_binding()
        binding.bind_cpu_input("prev_token", batch.prev)
        binding.bind_ortvalue_input("state", batch.state)
        binding.bind_ortvalue_input("memory", batch.memory)
        binding.bind_cpu_input("memory_mask", batch.mask)
        binding.bind_output("next_token", "cpu")
        binding.bind_output("new_state", self._device, self._device_id)
        self._decoder.run_with_iobinding(binding)
        token, state = binding.get_outputs()
        return _Batch(batch.memory, state, batch.mask, token.numpy().copy(), batch.rows)
