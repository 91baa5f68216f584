"""Model specifications of the two bundled tiers, and the hash that names their build.

Everything that changes the built graphs lives in `ModelSpec`, so hashing the spec (plus the
library versions that shape the files) is enough to decide whether a cached build is stale.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
from dataclasses import dataclass

import onnxruntime

__all__ = ["FORMAT_VERSION", "ModelSpec", "SPECS", "TIERS", "get_spec", "spec_hash"]

TIERS: tuple[str, ...] = ("quality", "fast")
FORMAT_VERSION = 1
GRAPH_LAYOUT = 2  # which graph files a build holds (2: plus the chunked-prefill stages)


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """Sizes and seed of one tier; the generated weights are a pure function of these fields."""

    tier: str
    d_model: int
    enc_layers: int
    enc_ffn: int
    dec_ffn: int
    src_vocab: int
    tgt_vocab: int
    seed: int
    int8: bool
    version: int = FORMAT_VERSION

    @property
    def name(self) -> str:
        """Model name reported to clients, e.g. ``rushhour-quality-v1``."""
        return f"rushhour-{self.tier}-v{self.version}"


SPECS: dict[str, ModelSpec] = {
    "quality": ModelSpec(
        tier="quality",
        d_model=512,
        enc_layers=1,
        enc_ffn=1024,
        dec_ffn=2048,
        src_vocab=8192,
        tgt_vocab=8192,
        seed=20240611,
        int8=False,
    ),
    "fast": ModelSpec(
        tier="fast",
        d_model=512,
        enc_layers=1,
        enc_ffn=512,
        dec_ffn=1536,
        src_vocab=8192,
        tgt_vocab=8192,
        seed=20240612,
        int8=True,
    ),
}


def get_spec(tier: str) -> ModelSpec:
    """Return the spec of `tier`, refusing unknown names with the list of valid ones."""
    try:
        return SPECS[tier]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown model tier {tier!r}; expected one of {', '.join(TIERS)}."
        ) from None


def spec_hash(spec: ModelSpec) -> str:
    """Short stable digest of the spec and of the library versions that write the files."""
    payload = {
        "spec": dataclasses.asdict(spec),
        "layout": GRAPH_LAYOUT,
        "onnx": importlib.metadata.version("onnx"),
        "onnxruntime": onnxruntime.__version__,
    }
    blob = json.dumps(payload, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
