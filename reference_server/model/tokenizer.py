"""Deterministic stand-in tokenizer: 4-character chunks in, short syllable pieces out.

Input text is cut into chunks of `CHARS_PER_PIECE` characters and each chunk is hashed into the
source vocabulary, so sequence length (and therefore compute) grows with characters the way a
subword model's does. Output ids index a fixed table of pronounceable pieces so the result reads
as text. Hashes are fixed integer mixes, never Python's per-process salted `hash()`.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "CHARS_PER_PIECE",
    "LANG_SLOTS",
    "PAD_ID",
    "detokenize",
    "encode_batch",
    "lang_token",
    "output_tokens",
    "piece_table",
]

CHARS_PER_PIECE = 4
LANG_SLOTS = 64
PAD_ID = 0

_MIX = np.array([0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F], dtype=np.uint64)
_ONSETS = ("", "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "br", "ch", "dr", "gl", "kr", "pl", "sh", "st", "tr", "th")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ei", "ou", "ia", "y")
_CODAS = ("", "", "", "n", "r", "s", "l", "t", "m", "nd", "st", "x")


def output_tokens(chars: int) -> int:
    """Decode steps needed for a text of `chars` characters: one piece per 4 chars, plus one."""
    if chars < 0:
        raise ValueError(f"A text cannot have {chars} characters; expected zero or more.")
    return 0 if chars == 0 else chars // CHARS_PER_PIECE + 1


def lang_token(lang: str) -> int:
    """Map a language code to one of the reserved language ids 1..LANG_SLOTS-1."""
    code = lang.strip().lower().encode()
    return 1 + zlib.crc32(code) % (LANG_SLOTS - 1)


def _chunk_ids(text: str, vocab: int) -> npt.NDArray[np.int64]:
    """Hash every 4-character chunk of `text` into [LANG_SLOTS, vocab), vectorised."""
    raw = text.encode("utf-32-le", "surrogatepass")  # lone surrogates can arrive via JSON
    codes = np.frombuffer(raw, dtype=np.uint32).astype(np.uint64)
    pad = -len(codes) % CHARS_PER_PIECE
    chunks = np.pad(codes, (0, pad)).reshape(-1, CHARS_PER_PIECE)
    mixed = (chunks * _MIX) & np.uint64(0xFFFFFFFF)
    h = np.bitwise_xor.reduce(mixed, axis=1)
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(0x2C1B3C6D)) & np.uint64(0xFFFFFFFF)
    return (h % np.uint64(vocab - LANG_SLOTS)).astype(np.int64) + LANG_SLOTS


def encode_batch(
    texts: Sequence[str], source_langs: Sequence[str], vocab: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return right-padded ids [B, S] (source-language token first) and the 0/1 mask [B, S]."""
    rows = [
        np.concatenate(([lang_token(lang)], _chunk_ids(text, vocab)))
        for text, lang in zip(texts, source_langs, strict=True)
    ]
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), PAD_ID, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask


def _piece(index: int) -> str:
    """Build piece `index` from a fixed digest so the table never depends on library RNGs."""
    d = hashlib.blake2b(f"piece-{index}".encode(), digest_size=8).digest()
    syllables = 1 + (d[0] % 3 == 0)
    text = "".join(
        _ONSETS[d[1 + 3 * s] % len(_ONSETS)]
        + _VOWELS[d[2 + 3 * s] % len(_VOWELS)]
        + _CODAS[d[3 + 3 * s] % len(_CODAS)]
        for s in range(syllables)
    )
    return (" " + text) if d[7] % 5 < 3 else text


def piece_table(size: int) -> tuple[str, ...]:
    """The output vocabulary: `size` short pieces, about 60% of which start a new word."""
    return tuple(_piece(i) for i in range(size))


def detokenize(ids: npt.NDArray[np.int64], table: Sequence[str]) -> str:
    """Join the pieces of one output row into sentence-like text."""
    text = "".join(table[i] for i in ids.tolist()).strip()
    return text[:1].upper() + text[1:] + ("." if text else "")
