"""Decode row by row for continuous batching: rows join and leave the running batch between steps.

The active set lives in host arrays: the decoder state [B, D], the previous tokens [B], and each
row's own encoder memory [S_i, D], unpadded. A step's decoder run takes the memory of its rows
padded with zeros to their longest source (exactly what the encoder writes for padding, and
masked out of attention), so a row's tokens never depend on its batch-mates; that padded batch
is built when the run's rows change and reused while they do not, so a row joining or leaving
copies the memory of its own run only, not that of every running document. With a prefill
budget (`ChunkedPrefill`), a joining row's encoder runs a chunk at a time at the start of each
step, shortest remaining work first, for at most the budget's token-passes per step
(`IDLE_PREFILL_FACTOR` times that in a step where no row decodes: it stalls nobody, and a
request arriving meanwhile still joins within a few milliseconds); the row joins the decode in
the step its memory is complete, and until then its piece is empty. Each step yields each row's
next piece of text such that the pieces of a row joined equal `detokenize` of its tokens: the
first piece loses its leading space and gains a capital, the last gains the full stop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from .interface import ModelInput, RowPiece
from .prefill import MIN_BUDGET, ChunkedPrefill, Prefill
from .tokenizer import encode_batch, lang_token, output_tokens

__all__ = ["IDLE_PREFILL_FACTOR", "HostRowDecoder", "row_steps"]

IDLE_PREFILL_FACTOR = 2
SPLIT_MIN_POSITIONS = 1024  # padded memory positions worth a second decoder run (about its fixed cost here)


def row_steps(item: ModelInput) -> int:
    """Decode steps of one row: one per output token, capped by the input's `max_tokens`."""
    steps = output_tokens(len(item.text))
    return steps if item.max_tokens is None else max(0, min(steps, item.max_tokens))


class HostRowDecoder:
    """The `RowDecoder` of the bundled model over its encoder and decoder-step sessions."""

    def __init__(self, encoder: ort.InferenceSession, decoder: ort.InferenceSession, *, d_model: int,
                 src_vocab: int, pieces: Sequence[str], prefill: ChunkedPrefill | None = None,
                 max_prefill_tokens: int = 0) -> None:
        if max_prefill_tokens and (prefill is None or max_prefill_tokens < MIN_BUDGET):
            raise ValueError(f"max_prefill_tokens must be 0 (no chunked prefill) or at least {MIN_BUDGET} with "
                             f"the prefill stages loaded, not {max_prefill_tokens}.")
        self._encoder = encoder
        self._decoder = decoder
        self._d_model = d_model
        self._src_vocab = src_vocab
        self._pieces = pieces
        self._prefill = prefill
        self.max_prefill_tokens = max_prefill_tokens
        self.prefill_tokens = 0  # token-passes the last step spent on prefill
        self.prefill_idle = False  # whether no row decoded in that step's prefill (the larger budget)
        self._order: list[int] = []  # row ids in admission order: row i of the active set is _order[i]
        self._next_id = 0
        self._waiting: dict[int, Prefill] = {}
        self._ids = np.zeros(0, dtype=np.int64)  # row id of each decoding row, in array order
        self._memory: list[npt.NDArray[np.float32]] = []  # each decoding row's memory [S_i, D]
        self._widths = np.zeros(0, dtype=np.int64)  # S_i: each decoding row's source tokens
        self._runs: dict[tuple[int, ...], tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]] = {}
        self._state = np.zeros((0, d_model), dtype=np.float32)
        self._prev = np.zeros(0, dtype=np.int64)
        self._done = np.zeros(0, dtype=np.int64)  # steps taken per row
        self._steps = np.zeros(0, dtype=np.int64)  # steps needed per row

    @property
    def size(self) -> int:
        return len(self._order)

    @property
    def decoding(self) -> int:
        """Rows encoded and in the decode (the rest are still prefilling)."""
        return len(self._ids)

    def step_budget(self) -> int:
        """Token-passes of prefill the next step may run: the budget, or more when nothing decodes."""
        return self.max_prefill_tokens * (IDLE_PREFILL_FACTOR if not self.decoding else 1)

    @property
    def prefilling(self) -> int:
        """Rows admitted whose encoder has not finished yet."""
        return len(self._waiting)

    def admit(self, inputs: Sequence[ModelInput]) -> None:
        """Add the new rows: encoded at once without a prefill budget, else a chunk per step."""
        if not inputs:
            return
        ids = list(range(self._next_id, self._next_id + len(inputs)))
        self._next_id += len(inputs)
        self._order += ids
        if self._prefill is not None and self.max_prefill_tokens:
            self._waiting.update({row: self._prefill.start(item) for row, item in zip(ids, inputs, strict=True)})
            return
        tokens, mask = encode_batch([i.text for i in inputs], [i.source_lang for i in inputs], self._src_vocab)
        memory = np.asarray(self._encoder.run(None, {"input_ids": tokens, "attention_mask": mask})[0], dtype=np.float32)
        self._append(ids, memory, mask, inputs)

    def _append(self, ids: Sequence[int], memory: npt.NDArray[np.float32], mask: npt.NDArray[np.int64],
                inputs: Sequence[ModelInput]) -> None:
        widths = mask.sum(axis=1).astype(np.int64)
        self._memory += [np.ascontiguousarray(memory[j, :w]) for j, w in enumerate(widths.tolist())]
        self._widths = np.concatenate([self._widths, widths])
        self._state = np.concatenate([self._state, np.zeros((len(inputs), self._d_model), dtype=np.float32)])
        self._prev = np.concatenate([self._prev, [lang_token(i.target_lang) for i in inputs]]).astype(np.int64)
        self._done = np.concatenate([self._done, np.zeros(len(inputs), dtype=np.int64)])
        self._steps = np.concatenate([self._steps, [row_steps(i) for i in inputs]]).astype(np.int64)
        self._ids = np.concatenate([self._ids, np.asarray(ids, dtype=np.int64)])
        order = np.argsort(self._widths, kind="stable")  # shortest sources first: see _groups
        if (order != np.arange(len(order))).any():
            self._keep(order)

    def _keep(self, index: npt.NDArray[np.int64]) -> None:
        """Keep the decoding rows at `index` (array positions), in that order."""
        self._memory = [self._memory[i] for i in index.tolist()]
        self._widths, self._state, self._prev = self._widths[index], self._state[index], self._prev[index]
        self._done, self._steps, self._ids = self._done[index], self._steps[index], self._ids[index]

    def retire(self, rows: Sequence[int]) -> None:
        """Remove rows by their index in the active set; the rest keep their order."""
        if not len(rows):
            return
        bad = [r for r in rows if not 0 <= r < self.size]
        if bad:
            raise IndexError(f"Rows {bad} are not in the active set of {self.size} rows.")
        gone = {self._order[r] for r in rows}
        self._order = [row for row in self._order if row not in gone]
        for row in gone:
            self._waiting.pop(row, None)
        keep = ~np.isin(self._ids, list(gone))
        if not keep.all():
            self._keep(np.flatnonzero(keep))

    def step(self) -> list[RowPiece]:
        """Prefill within the budget, then one decoder step for every encoded row; a row still
        prefilling gets an empty piece, a row already done an empty final one."""
        if not self.size:
            return []
        self._advance_prefills()
        pieces: dict[int, RowPiece] = {}
        if len(self._ids):
            tokens, state = self._decode()
            live = self._done < self._steps
            self._prev = np.where(live, tokens, self._prev).astype(np.int64)
            self._state = np.where(live[:, None], state, self._state).astype(np.float32)
            for row, tok, t, n in zip(self._ids.tolist(), tokens, self._done, self._steps):
                pieces[row] = self._piece(int(tok), int(t), int(n))
            self._done = np.minimum(self._done + 1, self._steps)
        return [pieces.get(row, RowPiece("", False)) for row in self._order]

    def _groups(self) -> list[tuple[int, int, int]]:
        """(first row, end row, memory width) of each decoder run of this step. Rows are kept
        shortest source first, so the short rows can run apart, trimmed to their own longest
        source, when that saves more padded memory positions than a second run costs: seven
        short texts beside a 4,000-character document then stop attending over 1,001 positions
        each (padding they would only mask out)."""
        widths = self._widths
        full, rows = int(widths[-1]), len(widths)
        saved = [(k * (full - int(widths[k - 1])), k) for k in range(1, rows)]
        best, split = max(saved, default=(0, 0))
        if best < SPLIT_MIN_POSITIONS:
            return [(0, rows, full)]
        return [(0, split, int(widths[split - 1])), (split, rows, full)]

    def _decode(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """One decoder step over every encoded row, in one or two runs (`_groups`)."""
        tokens, states, runs = [], [], {}
        for first, end, width in self._groups():
            key = (width, *self._ids[first:end].tolist())
            memory, mask = runs[key] = self._runs.get(key) or self._batch(first, end, width)
            feeds = {"prev_token": self._prev[first:end], "state": self._state[first:end], "memory": memory, "memory_mask": mask}
            token, state = self._decoder.run(None, feeds)
            tokens.append(token)
            states.append(state)
        self._runs = runs  # a run whose rows changed is built again; the others are kept
        return np.concatenate(tokens), np.concatenate(states)

    def _batch(self, first: int, end: int, width: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """The memory [n, width, D] and mask [n, width] of rows first..end-1, zero-padded."""
        memory = np.zeros((end - first, width, self._d_model), dtype=np.float32)
        mask = np.zeros((end - first, width), dtype=np.int64)
        for row, (source, tokens) in enumerate(zip(self._memory[first:end], self._widths[first:end].tolist(), strict=True)):
            memory[row, :tokens] = source
            mask[row, :tokens] = 1
        return memory, mask

    def _advance_prefills(self) -> None:
        """Spend the step's budget on the rows still encoding, the least work left first."""
        self.prefill_tokens, self.prefill_idle = 0, not self.decoding
        if not self._waiting or self._prefill is None:
            return
        budget = self.step_budget()
        for row, prefill in sorted(self._waiting.items(), key=lambda kv: (kv[1].remaining, kv[0])):
            self.prefill_tokens += self._prefill.advance(prefill, budget - self.prefill_tokens)
            if prefill.done:
                del self._waiting[row]
                self._append([row], prefill.memory, prefill.mask, [prefill.item])

    def _piece(self, token: int, t: int, steps: int) -> RowPiece:
        if t >= steps:
            return RowPiece("", True)
        text = self._pieces[token]
        if t == 0:
            text = text.lstrip()
            text = text[:1].upper() + text[1:]
        if t == steps - 1:
            return RowPiece(text + ".", True)
        return RowPiece(text, False)

