"""The L1 cache is bounded in bytes: LRU eviction by size, CJK weighs its real weight, exposed in status."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import pytest

from rushhour.reference_server.config import DEFAULT_CACHE_MAX_BYTES, CacheConfig, ConfigError, load_config
from rushhour.reference_server.gateway.cache import ENTRY_OVERHEAD_BYTES, TranslationCache, cache_key, entry_bytes
from tests.support.server import RunningServer

MIB = 1024 * 1024


def _key(text: str) -> tuple[str, str, str, str]:
    return cache_key(text, "en", "de", "quality")


def _cache(max_bytes: int, max_entries: int = 50_000) -> TranslationCache:
    return TranslationCache(max_entries=max_entries, ttl_s=600, max_bytes=max_bytes)


def test_cache_bytes_default_bound_is_64_mib() -> None:
    assert CacheConfig().max_bytes == DEFAULT_CACHE_MAX_BYTES == 64 * MIB
    assert TranslationCache(max_entries=10, ttl_s=1).max_bytes == 64 * MIB


def test_cache_bytes_evicts_least_recently_used_until_under_the_bound() -> None:
    text = "x" * 1000
    size = entry_bytes(_key(text + "0000"), text.upper() + "0000")
    cache = _cache(max_bytes=size * 3)
    for i in range(3):
        cache.put(_key(f"{text}{i:04d}"), f"{text.upper()}{i:04d}", "quality")
    assert cache.get(_key(f"{text}0000")) is not None  # now the most recently used
    cache.put(_key(f"{text}0003"), f"{text.upper()}0003", "quality")
    assert cache.get(_key(f"{text}0001")) is None  # the least recently used went
    assert cache.get(_key(f"{text}0000")) is not None
    assert len(cache) == 3 and cache.bytes == 3 * size <= cache.max_bytes
    assert cache.evictions == 1


def test_cache_bytes_replacing_an_entry_counts_it_once() -> None:
    cache = _cache(max_bytes=MIB)
    cache.put(_key("a"), "short", "quality")
    cache.put(_key("a"), "a much longer translation", "quality")
    assert cache.bytes == entry_bytes(_key("a"), "a much longer translation")
    cache.clear()
    assert (len(cache), cache.bytes) == (0, 0)


def test_cache_bytes_an_entry_over_the_bound_is_not_kept() -> None:
    cache = _cache(max_bytes=4096)
    cache.put(_key("small"), "s", "quality")
    cache.put(_key("big"), "y" * 10_000, "quality")
    assert cache.get(_key("big")) is None and cache.get(_key("small")) is not None
    cache.put(_key("small"), "z" * 10_000, "quality")  # a too-large new value drops the old one too
    assert (len(cache), cache.bytes) == (0, 0)


def test_cache_bytes_cjk_text_weighs_more_than_latin() -> None:
    latin, cjk = "a" * 1000, "翻" * 1000
    assert entry_bytes(_key(cjk), cjk) > entry_bytes(_key(latin), latin) + 1500
    assert entry_bytes(_key(""), "") >= ENTRY_OVERHEAD_BYTES


@pytest.mark.slow
def test_cache_bytes_real_memory_stays_near_the_bound() -> None:
    """5,000-character texts, as many as the entry bound allows: the memory held follows max_bytes."""
    bound = 4 * MIB
    cache = _cache(max_bytes=bound)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(2000):  # about 20 MB of texts and translations offered
            text = f"{i:05d} " + "The promotion starts at noon. " * 166
            cache.put(_key(text), text.upper(), "quality")
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.bytes <= bound and cache.evictions > 0
    assert held < bound * 1.25, f"the cache holds {held / MIB:.1f} MiB for a {bound / MIB:.0f} MiB bound"


def test_cache_bytes_config_rejects_a_negative_bound(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "server.yaml"  # type: ignore[operator]
    path.write_text("cache:\n  max_bytes: -1\n")
    with pytest.raises(ConfigError, match="max_bytes"):
        load_config(path)
    with pytest.raises(ValueError, match="-1 bytes"):
        _cache(max_bytes=-1)


@pytest.mark.slow
def test_cache_bytes_status_shows_the_bound_and_the_bytes_held(server_factory: Callable[..., RunningServer]) -> None:
    server = server_factory({"cache": {"max_bytes": 8_000}, "pools": {"quality": {"nodes": 1}}})
    for i in range(6):
        assert server.translate(f"Order {i} ships today. " * 100, mode="fast").status_code == 200
    cache = server.status()["cache"]
    assert cache["max_bytes"] == 8_000
    assert 0 < cache["bytes"] <= 8_000
    assert cache["evictions"] > 0 and cache["entries"] < 6, cache
