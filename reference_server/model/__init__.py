"""The bundled stand-in translation model: an ONNX encoder + decoder-step pair, two tiers.

Deterministic gibberish at the cost of a real small MT model; see `interface` for how to serve
a real seq2seq model through the same node interface. `providers` decides where each tier runs
(CUDA in fp16 or the CPU), `binding` is the decode loop that keeps tensors on the GPU.
"""

from __future__ import annotations

try:
    import onnxruntime  # noqa: F401  (the build is an extra: say which, rather than fail deep inside)
except ImportError as exc:
    raise ImportError(
        "ONNX Runtime is not installed. rushhour needs exactly one of its builds: "
        "`pip install -e '.[cpu]'` (or `make install`) for the CPU, `pip install -e '.[gpu]'` "
        "(or `make install-gpu`) for NVIDIA GPUs."
    ) from exc

from .build import build_model
from .interface import ModelInput, Seq2SeqModel
from .providers import ProviderRequirementError
from .runtime import load_model
from .spec import TIERS
from .tokenizer import output_tokens

__all__ = [
    "TIERS",
    "ModelInput",
    "ProviderRequirementError",
    "Seq2SeqModel",
    "build_model",
    "load_model",
    "output_tokens",
]
