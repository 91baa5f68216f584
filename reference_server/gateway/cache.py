"""L1 translation cache (LRU bounded in entries and in bytes, with a TTL and a stale grace) and
request coalescing."""

from __future__ import annotations

import asyncio
import sys
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from rushhour.reference_server.config import DEFAULT_CACHE_MAX_BYTES

T = TypeVar("T")
CacheKey = tuple[str, str, str, str]
ENTRY_OVERHEAD_BYTES = 256  # key tuple, entry object, dict slot: measured with tracemalloc on CPython 3.11


def cache_key(text: str, source_lang: str, target_lang: str, tier: str) -> CacheKey:
    """Texts that differ only in Unicode form, case of language codes or whitespace share an entry."""
    normalised = " ".join(unicodedata.normalize("NFC", text).split())
    return (normalised, source_lang.lower(), target_lang.lower(), tier)


@dataclass
class CachedTranslation:
    translation: str
    model: str
    stored_at: float


def entry_bytes(key: CacheKey, translation: str) -> int:
    """Memory an entry holds: its text and translation as CPython stores them (1, 2 or 4 bytes a
    character, so CJK text weighs more than Latin), plus a fixed overhead. Language codes and the
    tier and model names are shared between entries and not counted."""
    return sys.getsizeof(key[0]) + sys.getsizeof(translation) + ENTRY_OVERHEAD_BYTES


class TranslationCache:
    """LRU bounded in entries and in bytes (`entry_bytes`): the least recently used entries go
    until both bounds hold, and an entry larger than `max_bytes` alone is not kept. A fresh hit
    is younger than `ttl_s`; an entry stays usable as stale (for fallback when nothing can
    compute) until `ttl_s + stale_ttl_s`."""

    def __init__(
        self, *, max_entries: int, ttl_s: float, stale_ttl_s: float = 0.0, max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_bytes < 0:
            raise ValueError(f"A cache cannot be bounded to {max_bytes} bytes; give 0 or more.")
        self._entries: OrderedDict[CacheKey, CachedTranslation] = OrderedDict()
        self._sizes: dict[CacheKey, int] = {}
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self.evictions = 0
        self.ttl_s = ttl_s
        self.stale_ttl_s = stale_ttl_s
        self._clock = clock
        self.hits = 0
        self.misses = 0
        self.stale_hits = 0
        self._saved: list[tuple[CacheKey, CachedTranslation]] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> CachedTranslation | None:
        entry = self._entries.get(key)
        if entry is None or self._clock() - entry.stored_at > self.ttl_s:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def get_stale(self, key: CacheKey) -> CachedTranslation | None:
        entry = self._entries.get(key)
        if entry is None or self._clock() - entry.stored_at > self.ttl_s + self.stale_ttl_s:
            return None
        self.stale_hits += 1
        return entry

    def put(self, key: CacheKey, translation: str, model: str) -> None:
        size = entry_bytes(key, translation)
        if self.max_entries <= 0 or size > self.max_bytes:
            self._drop(key)
            return
        self._drop(key)
        self._entries[key] = CachedTranslation(translation, model, self._clock())
        self._sizes[key] = size
        self.bytes += size
        while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
            oldest = next(iter(self._entries))
            self._drop(oldest)
            self.evictions += 1

    def _drop(self, key: CacheKey) -> None:
        if self._entries.pop(key, None) is not None:
            self.bytes -= self._sizes.pop(key)

    def clear(self) -> None:
        self._entries.clear()
        self._sizes.clear()
        self.bytes = 0

    def save(self) -> int:
        """Keep a copy of the entries as they are now (a later `restore` returns to it); their count."""
        self._saved = list(self._entries.items())
        return len(self._saved)

    def restore(self) -> int | None:
        """Hold exactly the entries `save` kept, in their recency order and fresh from now, so that a
        run of measurements can each start from the same cache; None when nothing was saved."""
        if self._saved is None:
            return None
        self.clear()
        for key, entry in self._saved:
            self.put(key, entry.translation, entry.model)
        return len(self._entries)


class Coalescer:
    """Identical requests in flight share one computation: the first caller runs it, the
    others await its result (or its error)."""

    def __init__(self) -> None:
        self._inflight: dict[object, asyncio.Future[Any]] = {}
        self.coalesced = 0

    def __len__(self) -> int:
        return len(self._inflight)

    async def run(self, key: object, compute: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """Returns the result and whether this caller shared someone else's computation."""
        while (existing := self._inflight.get(key)) is not None:
            self.coalesced += 1
            try:
                return await asyncio.shield(existing), True
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if existing.cancelled() and not (task is not None and task.cancelling()):
                    continue  # the leader went away, not this caller: compute it here
                raise
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = await compute()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved when nobody else waited
            raise
        else:
            future.set_result(result)
            return result, False
        finally:
            del self._inflight[key]
