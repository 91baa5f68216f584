"""TranslationCache (LRU, TTL, stale grace), cache_key normalisation and the Coalescer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from rushhour.reference_server.gateway.cache import Coalescer, TranslationCache, cache_key


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _key(text: str) -> tuple[str, str, str, str]:
    return cache_key(text, "en", "de", "quality")


# ---- cache_key --------------------------------------------------------------------------------


def test_cache_key_collapses_whitespace() -> None:
    assert _key("  hello \t\n  world  ") == _key("hello world")


def test_cache_key_normalises_unicode_to_nfc() -> None:
    decomposed = "cafe\u0301"
    composed = "caf\u00e9"
    assert _key(decomposed) == _key(composed)
    assert _key(decomposed)[0] == composed


def test_cache_key_ignores_the_case_of_language_codes() -> None:
    assert cache_key("hi", "EN", "De", "fast") == cache_key("hi", "en", "de", "fast")


def test_cache_key_keeps_texts_langs_and_tiers_apart() -> None:
    keys = {
        cache_key("hi", "en", "de", "fast"),
        cache_key("hi", "en", "de", "quality"),
        cache_key("hi", "en", "fr", "fast"),
        cache_key("Hi", "en", "de", "fast"),
    }
    assert len(keys) == 4


# ---- TranslationCache -------------------------------------------------------------------------


def test_cache_hit_returns_the_stored_translation_and_counts() -> None:
    cache = TranslationCache(max_entries=10, ttl_s=60, clock=FakeClock())
    assert cache.get(_key("a")) is None
    cache.put(_key("a"), "A", "quality")
    entry = cache.get(_key("a"))
    assert entry is not None and (entry.translation, entry.model) == ("A", "quality")
    assert (cache.hits, cache.misses) == (1, 1)


def test_cache_evicts_the_least_recently_used_entry() -> None:
    cache = TranslationCache(max_entries=2, ttl_s=60, clock=FakeClock())
    cache.put(_key("a"), "A", "m")
    cache.put(_key("b"), "B", "m")
    assert cache.get(_key("a")) is not None  # "a" is now the most recently used
    cache.put(_key("c"), "C", "m")
    assert len(cache) == 2
    assert cache.get(_key("b")) is None
    assert cache.get(_key("a")) is not None
    assert cache.get(_key("c")) is not None


def test_cache_entry_expires_after_its_ttl() -> None:
    clock = FakeClock()
    cache = TranslationCache(max_entries=10, ttl_s=60, clock=clock)
    cache.put(_key("a"), "A", "m")
    clock.now = 60.0
    assert cache.get(_key("a")) is not None
    clock.now = 60.5
    assert cache.get(_key("a")) is None
    assert (cache.hits, cache.misses) == (1, 1)


def test_cache_put_again_refreshes_the_entry() -> None:
    clock = FakeClock()
    cache = TranslationCache(max_entries=10, ttl_s=60, clock=clock)
    cache.put(_key("a"), "old", "m")
    clock.now = 50.0
    cache.put(_key("a"), "new", "m")
    clock.now = 100.0
    entry = cache.get(_key("a"))
    assert entry is not None and entry.translation == "new"
    assert len(cache) == 1


def test_cache_serves_stale_entries_within_the_stale_window() -> None:
    clock = FakeClock()
    cache = TranslationCache(max_entries=10, ttl_s=60, stale_ttl_s=30, clock=clock)
    cache.put(_key("a"), "A", "m")
    clock.now = 80.0
    assert cache.get(_key("a")) is None
    stale = cache.get_stale(_key("a"))
    assert stale is not None and stale.translation == "A"
    assert cache.stale_hits == 1
    clock.now = 90.5
    assert cache.get_stale(_key("a")) is None
    assert cache.stale_hits == 1


def test_cache_without_a_stale_window_has_nothing_stale() -> None:
    clock = FakeClock()
    cache = TranslationCache(max_entries=10, ttl_s=60, clock=clock)
    cache.put(_key("a"), "A", "m")
    clock.now = 61.0
    assert cache.get_stale(_key("a")) is None
    assert cache.get_stale(_key("missing")) is None


def test_cache_with_zero_entries_stores_nothing() -> None:
    cache = TranslationCache(max_entries=0, ttl_s=60, clock=FakeClock())
    cache.put(_key("a"), "A", "m")
    assert len(cache) == 0
    assert cache.get(_key("a")) is None


def test_cache_clear_empties_it() -> None:
    cache = TranslationCache(max_entries=10, ttl_s=60, clock=FakeClock())
    cache.put(_key("a"), "A", "m")
    cache.clear()
    assert len(cache) == 0 and cache.get(_key("a")) is None



def test_cache_restore_returns_to_the_saved_entries_fresh_and_in_their_order() -> None:
    clock = FakeClock()
    cache = TranslationCache(max_entries=2, ttl_s=60, clock=clock)
    cache.put(_key("a"), "A", "m")
    cache.put(_key("b"), "B", "m")
    assert cache.save() == 2
    cache.put(_key("c"), "C", "m")  # evicts "a"
    clock.now = 100.0  # past every entry's TTL
    assert cache.restore() == 2
    assert cache.get(_key("c")) is None
    cache.put(_key("d"), "D", "m")  # "a" was the older of the two saved: it goes first
    assert cache.get(_key("a")) is None
    restored = cache.get(_key("b"))
    assert restored is not None and restored.translation == "B"


def test_cache_restore_can_be_repeated_and_needs_a_save() -> None:
    cache = TranslationCache(max_entries=10, ttl_s=60, clock=FakeClock())
    assert cache.restore() is None
    cache.put(_key("a"), "A", "m")
    assert cache.restore() is None and len(cache) == 1  # nothing saved: the cache is left as it is
    cache.save()
    for text in ("b", "c"):
        cache.put(_key(text), text.upper(), "m")
        assert cache.restore() == 1
        assert cache.get(_key(text)) is None and cache.get(_key("a")) is not None


# ---- Coalescer --------------------------------------------------------------------------------


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_coalescer_runs_identical_keys_once() -> None:
    async def main() -> None:
        coalescer = Coalescer()
        release = asyncio.Event()
        calls = 0

        async def compute() -> str:
            nonlocal calls
            calls += 1
            await release.wait()
            return "result"

        tasks = [asyncio.create_task(coalescer.run("k", compute)) for _ in range(3)]
        await _settle()
        assert len(coalescer) == 1
        release.set()
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)
        assert results == [("result", False), ("result", True), ("result", True)]
        assert calls == 1
        assert coalescer.coalesced == 2
        assert len(coalescer) == 0

    asyncio.run(main())


def test_coalescer_runs_different_keys_separately() -> None:
    async def main() -> None:
        coalescer = Coalescer()
        release = asyncio.Event()
        seen: list[str] = []

        def compute_for(key: str) -> Callable[[], Awaitable[str]]:
            async def compute() -> str:
                seen.append(key)
                await release.wait()
                return key.upper()

            return compute

        tasks = [asyncio.create_task(coalescer.run(k, compute_for(k))) for k in ("a", "b")]
        await _settle()
        release.set()
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)
        assert results == [("A", False), ("B", False)]
        assert sorted(seen) == ["a", "b"]
        assert coalescer.coalesced == 0

    asyncio.run(main())


def test_coalescer_computes_again_once_the_first_call_is_done() -> None:
    async def main() -> None:
        coalescer = Coalescer()
        calls = 0

        async def compute() -> int:
            nonlocal calls
            calls += 1
            return calls

        assert await coalescer.run("k", compute) == (1, False)
        assert await coalescer.run("k", compute) == (2, False)

    asyncio.run(main())


def test_coalescer_sends_the_error_to_every_caller() -> None:
    async def main() -> None:
        coalescer = Coalescer()
        release = asyncio.Event()

        async def compute() -> str:
            await release.wait()
            raise ValueError("node down")

        tasks = [asyncio.create_task(coalescer.run("k", compute)) for _ in range(3)]
        await _settle()
        release.set()
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=5)
        assert all(isinstance(r, ValueError) and str(r) == "node down" for r in results)
        assert len(coalescer) == 0

    asyncio.run(main())


def test_coalescer_error_without_followers_leaves_nothing_behind() -> None:
    async def main() -> None:
        coalescer = Coalescer()

        async def compute() -> str:
            raise KeyError("x")

        with pytest.raises(KeyError):
            await coalescer.run("k", compute)
        assert len(coalescer) == 0

    asyncio.run(main())


def test_coalescer_follower_cancellation_does_not_disturb_the_leader() -> None:
    async def main() -> None:
        coalescer = Coalescer()
        release = asyncio.Event()

        async def compute() -> str:
            await release.wait()
            return "result"

        leader = asyncio.create_task(coalescer.run("k", compute))
        follower = asyncio.create_task(coalescer.run("k", compute))
        other = asyncio.create_task(coalescer.run("k", compute))
        await _settle()
        follower.cancel()
        await _settle()
        release.set()
        assert await asyncio.wait_for(leader, timeout=5) == ("result", False)
        assert await asyncio.wait_for(other, timeout=5) == ("result", True)
        assert follower.cancelled()

    asyncio.run(main())


def test_coalescer_leader_cancellation_clears_the_in_flight_entry() -> None:
    async def main() -> None:
        coalescer = Coalescer()

        async def forever() -> str:
            await asyncio.Event().wait()
            return "never"

        leader = asyncio.create_task(coalescer.run("k", forever))
        await _settle()
        leader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leader
        assert len(coalescer) == 0

        async def quick() -> str:
            return "fresh"

        assert await coalescer.run("k", quick) == ("fresh", False)

    asyncio.run(main())


def test_coalescer_follower_survives_the_leader_being_cancelled() -> None:
    async def main() -> None:
        coalescer = Coalescer()
        calls = 0

        async def compute() -> str:
            nonlocal calls
            calls += 1
            if calls == 1:
                await asyncio.Event().wait()  # the leader's computation never finishes
            return "result"

        leader = asyncio.create_task(coalescer.run("k", compute))
        await _settle()
        follower = asyncio.create_task(coalescer.run("k", compute))
        await _settle()
        leader.cancel()
        result = await asyncio.wait_for(asyncio.gather(follower, return_exceptions=True), timeout=5)
        assert result[0] == ("result", False)

    asyncio.run(main())
