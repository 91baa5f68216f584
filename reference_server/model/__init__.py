"""The bundled stand-in translation model: an ONNX encoder + decoder-step pair, two tiers.

Deterministic gibberish at the cost of a real small MT model; see `interface` for how to serve
a real seq2seq model through the same node interface.
"""

from __future__ import annotations

from .build import build_model
from .interface import ModelInput, Seq2SeqModel
from .runtime import load_model
from .spec import TIERS
from .tokenizer import output_tokens

__all__ = ["TIERS", "ModelInput", "Seq2SeqModel", "build_model", "load_model", "output_tokens"]
