"""What a node needs from a model: a batch of texts in, one translation per text out.

Any object with these attributes serves through the reference server's nodes, so a real ONNX
seq2seq model can replace the bundled stand-in without touching batching, caching or admission.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["ModelInput", "RowDecoder", "RowPiece", "Seq2SeqModel", "StepwiseModel"]


@dataclass(frozen=True)
class ModelInput:
    """One request as the model sees it; `max_tokens` caps its output tokens (None: no cap)."""

    text: str
    source_lang: str
    target_lang: str
    max_tokens: int | None = None


@runtime_checkable
class Seq2SeqModel(Protocol):
    """A loaded model replica; `translate_batch` returns one output per input, same order."""

    tier: str
    provider: str
    name: str

    def translate_batch(self, inputs: Sequence[ModelInput]) -> list[str]: ...


@dataclass(frozen=True)
class RowPiece:
    """What one decode step gave one row: its next piece of text, and whether the row is done.

    The pieces of a row joined are exactly what `translate_batch` returns for its input."""

    text: str
    done: bool


@runtime_checkable
class RowDecoder(Protocol):
    """An active set of rows decoded one step at a time (continuous batching): rows join with
    `admit` (their encoder runs) and leave with `retire` between steps; row i is the i-th row
    admitted and not yet retired."""

    @property
    def size(self) -> int: ...

    def admit(self, inputs: Sequence[ModelInput]) -> None: ...

    def retire(self, rows: Sequence[int]) -> None: ...

    def step(self) -> list[RowPiece]: ...


@runtime_checkable
class StepwiseModel(Protocol):
    """A model that can also decode row by row, as continuous batching needs; with
    `max_prefill_tokens` > 0 a joining row's encoder runs a chunk per step within that budget."""

    def row_decoder(self, max_prefill_tokens: int = 0) -> RowDecoder: ...
