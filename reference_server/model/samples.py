"""Deterministic sample texts of an exact length, for warm-up, tests and benchmarks."""

from __future__ import annotations

__all__ = ["sample_text"]

_WORDS = ("rush", "hour", "traffic", "peak", "latency", "model", "batch", "token", "node", "queue")


def sample_text(chars: int, salt: int = 0) -> str:
    """Deterministic word salad of exactly `chars` characters."""
    words = [_WORDS[(i * 7 + salt) % len(_WORDS)] for i in range(chars // 3 + 1)]
    return " ".join(words)[:chars]
