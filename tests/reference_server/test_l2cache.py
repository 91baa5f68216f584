"""The shared L2 cache in Redis: round trips, a dead Redis costs nothing, gateways share answers."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rushhour.reference_server.gateway.cache import cache_key
from rushhour.reference_server.gateway.l2cache import KEY_PREFIX, MIN_BACKOFF_S, L2Cache
from rushhour.reference_server.gateway.metrics import Metrics
from tests.support.redis import RedisServer, redis_or_skip
from tests.support.server import RunningServer, free_port


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = redis_or_skip(tmp_path / "redis")
    yield server
    server.stop()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


KEY = cache_key("Hello there.", "en", "de", "quality")


def test_l2_round_trip_with_ttl(redis_server: RedisServer) -> None:
    async def main() -> None:
        l2 = L2Cache(redis_server.url, ttl_s=30, metrics=Metrics())
        assert await l2.get(KEY) is None
        await l2.put(KEY, "Hallo.", "quality")
        entry = await l2.get(KEY)
        assert entry is not None and (entry.translation, entry.model) == ("Hallo.", "quality")
        assert l2.status() == {**l2.status(), "l2_hits": 1, "l2_misses": 1, "l2_errors": 0}
        await l2.close()

    asyncio.run(main())
    keys = redis_server.client().keys(KEY_PREFIX + "*")
    assert len(keys) == 1 and 0 < redis_server.client().pttl(keys[0]) <= 30_000


def test_l2_dead_redis_counts_one_error_then_backs_off() -> None:
    async def main() -> None:
        clock = FakeClock()
        metrics = Metrics()
        l2 = L2Cache(f"redis://127.0.0.1:{free_port()}/0", ttl_s=30, metrics=metrics, clock=clock)
        assert await l2.get(KEY) is None
        assert l2.errors == 1 and not l2.available()
        for _ in range(20):  # inside the back-off: no calls at all, so no added latency
            assert await l2.get(KEY) is None
            await l2.put(KEY, "x", "quality")
        assert l2.errors == 1 and l2.skipped == 40
        clock.now += MIN_BACKOFF_S
        assert l2.available()
        assert await l2.get(KEY) is None
        assert l2.errors == 2
        assert metrics.registry.get_sample_value("rushhour_l2_errors_total") == 2.0
        await l2.close()

    asyncio.run(main())


def test_l2_ignores_foreign_values(redis_server: RedisServer) -> None:
    from rushhour.reference_server.gateway.l2cache import redis_key

    redis_server.client().set(redis_key(KEY), b"not json")

    async def main() -> None:
        l2 = L2Cache(redis_server.url, ttl_s=30, metrics=Metrics())
        assert await l2.get(KEY) is None and l2.errors == 0
        await l2.close()

    asyncio.run(main())


# ---- live ---------------------------------------------------------------------------------------
def _config(url: str) -> dict[str, object]:
    return {"pools": {"fast": None, "quality": {"nodes": 1}}, "cache": {"redis_url": url}}


def _metric(server: RunningServer, pattern: str) -> float:
    match = re.search("^" + pattern + r" (\S+)$", server.client.get("/metrics").text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def _wait_for_keys(redis_server: RedisServer, count: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(redis_server.client().keys(KEY_PREFIX + "*")) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} L2 entries after {timeout_s} s")


@pytest.mark.slow
def test_l2_two_gateways_share_answers(redis_server: RedisServer, server_factory) -> None:
    first: RunningServer = server_factory(_config(redis_server.url))
    second: RunningServer = server_factory(_config(redis_server.url))
    computed = first.translate("The parcel leaves the warehouse tonight.").json()
    assert computed["cached"] is False
    _wait_for_keys(redis_server, 1)
    shared = second.translate("The parcel leaves the warehouse tonight.").json()
    assert shared["cached"] is True and shared["translation"] == computed["translation"] and shared["node"] == "cache"
    assert _metric(second, r'rushhour_cache_hits_total\{level="l2"\}') == 1.0
    assert second.status()["cache"]["l2_hits"] == 1
    again = second.translate("The parcel leaves the warehouse tonight.").json()
    assert again["cached"] is True and second.status()["cache"]["hits"] >= 1  # now from L1


@pytest.mark.slow
def test_l2_redis_down_leaves_translate_working(redis_server: RedisServer, server_factory) -> None:
    server: RunningServer = server_factory(_config(redis_server.url))
    assert server.translate("Before the outage.").status_code == 200
    _wait_for_keys(redis_server, 1)
    redis_server.stop()
    answers = [server.translate(f"During the outage, request {i}.") for i in range(20)]
    assert [a.status_code for a in answers] == [200] * 20
    status = server.status()
    assert status["cache"]["l2_errors"] >= 1 and status["cache"]["l2_skipped"] >= 1
    assert _metric(server, "rushhour_l2_errors_total") >= 1
    # Redis comes back on the same port: after the back-off, new answers reach it again.
    redis_server.start()
    deadline = time.monotonic() + 30
    i = 0
    while not redis_server.client().keys(KEY_PREFIX + "*") and time.monotonic() < deadline:
        i += 1
        assert server.translate(f"After the outage, request {i}.").status_code == 200
        time.sleep(0.1)
    assert redis_server.client().keys(KEY_PREFIX + "*"), "L2 never resumed after Redis came back"


def test_l2_flush_deletes_only_its_own_keys(redis_server: RedisServer) -> None:
    redis_server.client().set("someone-else:key", "keep me")

    async def main() -> int:
        l2 = L2Cache(redis_server.url, ttl_s=30, metrics=Metrics())
        for i in range(3):
            await l2.put(cache_key(f"text {i}", "en", "de", "quality"), f"t{i}", "quality")
        deleted = await l2.flush()
        assert await l2.get(KEY) is None
        await l2.close()
        return deleted

    assert asyncio.run(main()) == 3
    assert redis_server.client().keys(KEY_PREFIX + "*") == []
    assert redis_server.client().get("someone-else:key") == b"keep me"
