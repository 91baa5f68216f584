"""The bundled stand-in translation model: an ONNX encoder + decoder-step pair, two tiers.

Deterministic gibberish at the cost of a real small MT model.

- `interface`: what a node needs from a model (texts in, one translation each out); a real seq2seq
  model is served through it
- `spec`: the two tiers' specifications, and the hash that names their build
- `graphs`: the encoder and decoder-step graphs from seeded numpy weights; `graph_builder`: a thin
  helper over `onnx.helper` they are written with
- `build`: a tier's ONNX files built once into a cache directory
- `providers`: where each tier runs (CUDA in fp16 or the CPU), and the check that refuses a GPU tier elsewhere
- `runtime`: the model run with ONNX Runtime: encode once, then one decoder step per output token
- `binding`: that decode loop with tensors kept on the GPU
- `rows`: decoding row by row, for continuous batching; `prefill`: a joining row's encoder run in chunks
- `tokenizer`: the stand-in tokenizer; `samples`: sample texts of an exact length
- `compare`: what `rushhour.reference_server.gpucheck` measures of loaded models (agreement,
  batch independence, batching's gain)
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
