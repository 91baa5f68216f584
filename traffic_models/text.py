"""Deterministic stand-in texts: the same id always gives the same words.

The schedule only carries (text_id, chars); the load generator turns them into text right
before sending. Sentences end in "." so document pipelines can split them.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from rushhour.traffic_models.catalog import splitmix64
from rushhour.traffic_models.limits import MAX_REQUEST_CHARS

_SYLLABLES = ("ka", "lo", "mi", "ter", "san", "ve", "ro", "di", "na", "pol", "es", "tu", "ga", "rin", "be", "o")
WORDS_PER_SENTENCE = (6, 16)


def _vocabulary() -> np.ndarray:
    """A fixed list of 512 pronounceable words, 1 to 3 syllables long."""
    rng = np.random.default_rng(20231116)
    sizes = rng.integers(1, 4, 512)
    picks = rng.integers(0, len(_SYLLABLES), (512, 3))
    return np.array(["".join(_SYLLABLES[i] for i in row[:n]) for row, n in zip(picks, sizes)], dtype=object)


_VOCABULARY = _vocabulary()


def _check_chars(chars: int) -> None:
    """A size the load generator can build: a text past MAX_REQUEST_CHARS is never made."""
    if not 0 <= chars <= MAX_REQUEST_CHARS:
        raise ValueError(f"chars must be from 0 to {MAX_REQUEST_CHARS:,} (the most one request carries), got {chars}.")


def text_for(text_id: int, chars: int) -> str:
    """Exactly `chars` characters of word-like text for this id (same id and length, same text)."""
    _check_chars(chars)
    if chars == 0:
        return ""
    seed = int(splitmix64(np.array([text_id], dtype=np.int64).astype(np.uint64))[0])
    rng = np.random.default_rng(seed)
    words = _VOCABULARY[rng.integers(0, _VOCABULARY.size, chars // 3 + 8)]
    ends = np.cumsum(rng.integers(*WORDS_PER_SENTENCE, words.size)) - 1
    ends = ends[ends < words.size]
    words[ends] = words[ends] + "."
    body = " ".join(words)[: chars - 1]
    if body.endswith((" ", ".")):
        body = body[:-1] + "a"
    return body + "."


BLOCK_ID_BASE = 1 << 58
"""Text ids of shared prompt blocks start here, away from the mix's and the replay's ids."""
BLOCK_CACHE_SIZE = 8192
"""Blocks kept ready (about 2 KB each at 4 characters per token)."""
RAW_PROMPT = "raw"
"""A schedule's `prompt` value for a trace prompt sent as it is, unique to its row."""


def block_prompt(salt: int, block_chars: int, block_ids: str) -> str:
    """The `prompt` value of a row whose text is made of shared blocks: "blocks:salt:chars:ids"."""
    return f"blocks:{salt % 65536}:{block_chars}:{block_ids}"


def prompt_text(prompt: str, text_id: int, chars: int) -> str:
    """Exactly `chars` characters for a row: its own text, or its shared blocks laid end to end.

    Two prompts naming the same block ids get the same text for those blocks (a prefix cache
    sees the reuse); text past the named blocks is the row's own.
    """
    _check_chars(chars)
    if not prompt.startswith("blocks:"):
        return text_for(text_id, chars)
    _, salt, size, ids = prompt.split(":", 3)
    block_chars, parts, total = int(size), [], 0
    for block in ids.split():
        if total >= chars:
            break
        parts.append(_block_text(BLOCK_ID_BASE + (int(salt) << 40) + int(block) % (1 << 40), block_chars))
        total += block_chars
    body = "".join(parts)[:chars]
    return body + text_for(text_id, chars - len(body)) if len(body) < chars else body


@lru_cache(maxsize=BLOCK_CACHE_SIZE)
def _block_text(block_id: int, block_chars: int) -> str:
    """One shared block, ending in a space; cached, since popular blocks open many prompts."""
    return text_for(block_id, block_chars - 1) + " "
