"""The batching defaults a node and the server's configuration share.

Kept apart from `rushhour.reference_server.config` (pydantic models built at import): a node process reads
these and nothing else of the configuration.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_BATCHING", "DEFAULT_PREFILL_TOKENS", "Batching", "default_batching"]

Batching = Literal["dynamic", "continuous"]
# Continuous batching with chunked prefill serves both bundled tiers best (docs/benchmarks.md,
# "Reference server batching"); dynamic batching stays a pool's choice.
DEFAULT_BATCHING: dict[str, Batching] = {"quality": "continuous", "fast": "continuous"}
# A 128-pass chunk costs about one decode step of eight rows, and the chunked encoder stays close to
# the whole one (smaller chunks pay ONNX Runtime's per-run cost more often): docs/benchmarks.md.
DEFAULT_PREFILL_TOKENS = 128


def default_batching(tier: str) -> Batching:
    """The batching mode a pool or node of `tier` gets when its configuration names none."""
    return DEFAULT_BATCHING.get(tier, "dynamic")
