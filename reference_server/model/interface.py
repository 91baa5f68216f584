"""What a node needs from a model: a batch of texts in, one translation per text out.

Any object with these attributes serves through the reference server's nodes, so a real ONNX
seq2seq model can replace the bundled stand-in without touching batching, caching or admission.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["ModelInput", "Seq2SeqModel"]


@dataclass(frozen=True)
class ModelInput:
    """One request as the model sees it."""

    text: str
    source_lang: str
    target_lang: str


@runtime_checkable
class Seq2SeqModel(Protocol):
    """A loaded model replica; `translate_batch` returns one output per input, same order."""

    tier: str
    provider: str
    name: str

    def translate_batch(self, inputs: Sequence[ModelInput]) -> list[str]: ...
