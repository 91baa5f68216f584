"""The encoder and decoder-step graphs, built from seeded numpy weights.

Two properties matter more than realism of the maths:

* Padding never leaks. Masked keys get a -1e9 score, whose softmax weight underflows to exactly
  zero, and padded memory rows are zeroed, so a row's result does not depend on its batch-mates.
* INT8 stays batch-independent. Dynamic quantization picks one activation scale per tensor, i.e.
  per *batch*, which would let one request's values change another's rounding. Before each
  quantizable MatMul the activation is clipped to [-CLIP, CLIP] and two anchor columns holding
  +CLIP and -CLIP are appended (their weight rows are zero), so the tensor's range, and with it
  the scale, is the same constant for every batch.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import onnx

from .graph_builder import BOOL, FLOAT, INT64, GraphBuilder
from .spec import ModelSpec

__all__ = ["CLIP", "build_decoder_step", "build_encoder", "build_prefill_stages"]

CLIP = 4.0
NEG = -1e9
ATTN_SHARPNESS = 2.0


class _Layers:
    """Weight generation plus the few building blocks both graphs share."""

    def __init__(self, gb: GraphBuilder, spec: ModelSpec, stream: int) -> None:
        self.gb = gb
        self.spec = spec
        self.rng = np.random.default_rng([spec.seed, stream])

    def weight(self, shape: tuple[int, ...], std: float) -> npt.NDArray[np.float32]:
        return self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    def linear(self, x: str, rank: int, fan_in: int, fan_out: int, gain: float = 1.0) -> str:
        """x @ W for a fresh W [fan_in, fan_out]; anchored for INT8 as the module docstring says."""
        w = self.weight((fan_in, fan_out), gain / math.sqrt(fan_in))
        if self.spec.int8:
            x = self.anchor(x, rank)
            w = np.concatenate([w, np.zeros((2, fan_out), np.float32)])
        return self.gb.op("MatMul", [x, self.gb.const(w, "w")])

    def anchor(self, x: str, rank: int) -> str:
        """Clip x and append +CLIP and -CLIP columns so its min and max are fixed constants."""
        gb = self.gb
        clipped = gb.op("Clip", [x, gb.const(-CLIP), gb.const(CLIP)])
        pads = gb.const([0] * (2 * rank - 1) + [1], "pads", np.int64)
        high = gb.op("Pad", [clipped, pads, gb.const(CLIP)])
        return gb.op("Pad", [high, pads, gb.const(-CLIP)])

    def axes(self, *axes: int) -> str:
        """An int64 axes/indices initializer, as Unsqueeze, Squeeze and Slice take them."""
        return self.gb.const(list(axes), "ax", np.int64)

    def bias(self, x: str, size: int) -> str:
        return self.gb.op("Add", [x, self.gb.const(self.weight((size,), 0.1), "b")])

    def layer_norm(self, x: str, size: int) -> str:
        gb = self.gb
        scale, shift = gb.const(np.ones(size)), gb.const(np.zeros(size))
        return gb.op("LayerNormalization", [x, scale, shift], axis=-1, epsilon=1e-5)

    def masked_softmax(self, scores: str, keep: str) -> str:
        """Softmax over the last axis where `keep` (bool, broadcastable) is False gets exactly 0."""
        hidden = self.gb.op("Where", [keep, scores, self.gb.const(NEG)])
        return self.gb.op("Softmax", [hidden], axis=-1)


def _positions(layers: _Layers, ids: str, offset: str | None = None) -> str:
    """Sinusoidal position table [S, D] computed in-graph, so any input length works; with
    `offset` (an int64 [1] input) the table of positions offset .. offset + S - 1."""
    gb, d = layers.gb, layers.spec.d_model
    seq = gb.op("Gather", [gb.op("Shape", [ids]), gb.const(1, "i", np.int64)], axis=0)
    seq_f = gb.op("Cast", [seq], to=FLOAT)
    if offset is None:
        pos = gb.op("Range", [gb.const(0.0), seq_f, gb.const(1.0)])
    else:
        first = gb.op("Cast", [gb.op("Squeeze", [offset, layers.axes(0)])], to=FLOAT)
        pos = gb.op("Range", [first, gb.op("Add", [first, seq_f]), gb.const(1.0)])
    freqs = np.exp(-math.log(10000.0) * np.arange(0, d, 2) / d).reshape(1, -1)
    column = gb.op("Unsqueeze", [pos, layers.axes(1)])
    angles = gb.op("Mul", [column, gb.const(freqs)])
    return gb.op("Concat", [gb.op("Sin", [angles]), gb.op("Cos", [angles])], axis=1)


def _embed(layers: _Layers, ids: str, table: str, offset: str | None = None) -> str:
    """Token embeddings plus positions: the encoder's input x [B,S,D]."""
    gb = layers.gb
    return gb.op("Add", [gb.op("Gather", [table, ids], axis=0), _positions(layers, ids, offset)])


def _project(layers: _Layers, x: str) -> tuple[str, str, str]:
    """The per-token half of a layer: queries, keys and values of x."""
    gb, d = layers.gb, layers.spec.d_model
    qkv = layers.linear(layers.layer_norm(x, d), 3, d, 3 * d)
    q, k, v = (
        gb.op("Slice", [qkv, layers.axes(i * d), layers.axes((i + 1) * d), layers.axes(2)])
        for i in range(3)
    )
    return q, k, v


def _attend(layers: _Layers, x: str, qkv: tuple[str, str, str], keep: str) -> str:
    """The rest of a layer for the queries' tokens: attention over every key, then a ReLU FFN,
    both residual. Each query row's result depends only on its own row and the keys."""
    gb, spec = layers.gb, layers.spec
    d = spec.d_model
    q, k, v = qkv
    k_t = gb.op("Transpose", [k], perm=[0, 2, 1])
    scores = gb.op("Mul", [gb.op("MatMul", [q, k_t]), gb.const(ATTN_SHARPNESS / math.sqrt(d))])
    attended = gb.op("MatMul", [layers.masked_softmax(scores, keep), v])
    x = gb.op("Add", [x, layers.linear(attended, 3, d, d, gain=0.5)])
    h = layers.linear(layers.layer_norm(x, d), 3, d, spec.enc_ffn, gain=1.4)
    h = gb.op("Relu", [layers.bias(h, spec.enc_ffn)])
    return gb.op("Add", [x, layers.linear(h, 3, spec.enc_ffn, d, gain=0.5)])


def _finish(layers: _Layers, x: str, mask: str) -> str:
    """Final layer norm, padded rows zeroed: the memory the decoder attends to."""
    gb = layers.gb
    rows = gb.op("Unsqueeze", [gb.op("Cast", [mask], to=FLOAT), layers.axes(2)])
    return gb.op("Mul", [layers.layer_norm(x, layers.spec.d_model), rows])


def build_encoder(spec: ModelSpec) -> onnx.ModelProto:
    """input_ids [B,S] int64 + attention_mask [B,S] int64 -> memory [B,S,D], padded rows zero."""
    gb = GraphBuilder(f"{spec.name}-encoder")
    layers = _Layers(gb, spec, stream=1)
    ids = gb.input("input_ids", INT64, ["batch", "src_len"])
    mask = gb.input("attention_mask", INT64, ["batch", "src_len"])
    table = gb.const(layers.weight((spec.src_vocab, spec.d_model), 1.0), "embed")
    x = _embed(layers, ids, table)
    keep = gb.op("Unsqueeze", [gb.op("Cast", [mask], to=BOOL), layers.axes(1)])
    for _ in range(spec.enc_layers):
        x = _attend(layers, x, _project(layers, x), keep)
    gb.output(_finish(layers, x, mask), "memory", FLOAT, ["batch", "src_len", spec.d_model])
    return gb.model()


def build_prefill_stages(spec: ModelSpec) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """The encoder cut in two so that a long source can be encoded a chunk of tokens at a time
    (chunked prefill), with the same weights, drawn in the same order, as `build_encoder`:

    * project: (input_ids [B,C], offset [1]) -> q, k, v [B,C,D] of tokens offset .. offset+C-1;
    * attend: (input_ids [B,C], offset, q [B,C,D], k, v [B,S,D], attention_mask [B,S],
      chunk_mask [B,C]) -> memory [B,C,D] of those C tokens, once every token's keys and values
      are known. It recomputes the chunk's embeddings rather than taking them in, so that ONNX
      Runtime fuses the same operations as in the whole encoder and the memory is bit-identical.

    Only a one-layer encoder cuts this way (both bundled tiers are)."""
    if spec.enc_layers != 1:
        raise ValueError(f"Chunked prefill needs a one-layer encoder; the {spec.tier} tier has {spec.enc_layers}.")
    d = spec.d_model
    project = GraphBuilder(f"{spec.name}-encoder-project")
    layers = _Layers(project, spec, stream=1)
    table = layers.weight((spec.src_vocab, d), 1.0)
    ids, offset = project.input("input_ids", INT64, ["batch", "chunk"]), project.input("offset", INT64, [1])
    x = _embed(layers, ids, project.const(table, "embed"), offset)
    for name, value in zip("qkv", _project(layers, x), strict=True):
        project.output(value, name, FLOAT, ["batch", "chunk", d])
    attend = GraphBuilder(f"{spec.name}-encoder-attend")
    layers.gb = attend
    ids, offset = attend.input("input_ids", INT64, ["batch", "chunk"]), attend.input("offset", INT64, [1])
    q = attend.input("q", FLOAT, ["batch", "chunk", d])
    k, v = attend.input("k", FLOAT, ["batch", "src_len", d]), attend.input("v", FLOAT, ["batch", "src_len", d])
    mask = attend.input("attention_mask", INT64, ["batch", "src_len"])
    keep = attend.op("Unsqueeze", [attend.op("Cast", [mask], to=BOOL), layers.axes(1)])
    x = _attend(layers, _embed(layers, ids, attend.const(table, "embed"), offset), (q, k, v), keep)
    memory = _finish(layers, x, attend.input("chunk_mask", INT64, ["batch", "chunk"]))
    attend.output(memory, "memory", FLOAT, ["batch", "chunk", d])
    return project.model(), attend.model()


def _attend_memory(layers: _Layers, x: str, memory: str, mask: str) -> str:
    """Single-query attention over memory: the per-row, length-dependent part of a step."""
    gb, d = layers.gb, layers.spec.d_model
    query = gb.op("Mul", [layers.linear(x, 2, d, d), gb.const(ATTN_SHARPNESS / math.sqrt(d))])
    scores = gb.op("MatMul", [memory, gb.op("Unsqueeze", [query, layers.axes(2)])])
    scores = gb.op("Squeeze", [scores, layers.axes(2)])
    keep = gb.op("Cast", [mask], to=BOOL)
    weights = gb.op("Unsqueeze", [layers.masked_softmax(scores, keep), layers.axes(1)])
    return gb.op("Squeeze", [gb.op("MatMul", [weights, memory]), layers.axes(1)])


def build_decoder_step(spec: ModelSpec) -> onnx.ModelProto:
    """One greedy step: (prev token, state, memory, mask) -> (next token, new state)."""
    gb = GraphBuilder(f"{spec.name}-decoder-step")
    layers = _Layers(gb, spec, stream=2)
    d, f = spec.d_model, spec.dec_ffn
    prev = gb.input("prev_token", INT64, ["batch"])
    state = gb.input("state", FLOAT, ["batch", d])
    memory = gb.input("memory", FLOAT, ["batch", "src_len", d])
    mask = gb.input("memory_mask", INT64, ["batch", "src_len"])
    table = gb.const(layers.weight((spec.tgt_vocab, d), 1.0), "embed")
    x = gb.op("Add", [gb.op("Gather", [table, prev], axis=0), state])
    context = _attend_memory(layers, x, memory, mask)
    joined = gb.op("Concat", [x, context], axis=1)
    hidden = gb.op("Relu", [layers.bias(layers.linear(joined, 2, 2 * d, f, 1.4), f)])
    new_state = gb.op("Tanh", [layers.bias(layers.linear(hidden, 2, f, d, 0.7), d)])
    logits = layers.linear(new_state, 2, d, spec.tgt_vocab)
    token = gb.op("ArgMax", [logits], axis=1, keepdims=0)
    gb.output(token, "next_token", INT64, ["batch"])
    gb.output(new_state, "new_state", FLOAT, ["batch", d])
    return gb.model()
