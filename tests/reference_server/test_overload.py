"""Integration: overload at several times capacity on a deliberately tiny pool
(one quality node, batches of 2, long texts): shed with 429/503 only, deadlines and memory
held, paid traffic served first, throughput back once the load drops."""

from __future__ import annotations

import concurrent.futures
import itertools
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import psutil
import pytest

from tests.support.load import percentile, run_load
from tests.support.server import RunningServer, all_nodes_ready, module_server, reset_after_each

TINY = {"pools": {"quality": {"nodes": 1, "max_batch_size": 2}, "fast": {"nodes": 1}}}
PARAGRAPH = "A long paragraph that keeps the single node busy for a while, sentence after sentence. " * 10
DEADLINE_MS = 3000
SLOTS = 2  # one quality node, batches of 2
SLOT_TIMES_PER_DEADLINE = 8
OVERLOAD_FACTOR = 5
OVERLOAD_S = 7  # seconds of overload: the queue fills within the first deadline and sheds from then on
MAX_RATE = 60.0  # what the test client can send on a small shared machine
RSS_SLACK_BYTES = 150 * 2**20


server = module_server("overload", TINY)
healthy = reset_after_each(flush_cache=True, ready=all_nodes_ready, timeout_s=30)


_CALLS = itertools.count()


def _body(tag: str, **fields: Any) -> Callable[[int], dict[str, Any]]:
    """Texts unique to this call: a rerun (or a later test on the same server) must not find
    them in the caches, or a capacity probe answered from the cache reads as a faster pool."""
    call = next(_CALLS)
    return lambda i: {"text": f"{tag} {call}-{i}. {PARAGRAPH}", "source_lang": "en", "target_lang": "de", **fields}


def _capacity(server: RunningServer, tag: str) -> float:
    """Requests/s the pool completes with its slots kept busy (closed loop, 4 callers)."""
    body = _body(tag, priority="paid", deadline_ms=60_000)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda i: server.client.post("/v1/translate", json=body(i)), range(16)))
    ok = sum(r.status_code == 200 for r in replies)
    # A measurement, not the behaviour under test: tolerate a stray refusal right after an
    # overload phase, but show it (it happened once in many runs and was not reproduced).
    strays = [(r.status_code, r.text[:200]) for r in replies if r.status_code != 200]
    if strays:
        print(f"capacity probe: {len(strays)} of 16 not 200: {strays}")
    assert ok >= 12, strays
    return ok / (time.monotonic() - started)


def _deadline_ms(capacity: float) -> float:
    """DEADLINE_MS, or 8 slot times (SLOTS / capacity) when the pool is slower than that.

    A paid request waits for about one slot time and then holds a slot for one: the deadline
    leaves it room for the machine to slow down 3-4x between the capacity probe and the load
    (other tests share the two cores), so what is judged is the admission, not the neighbours."""
    return max(float(DEADLINE_MS), SLOT_TIMES_PER_DEADLINE * SLOTS / capacity * 1000.0)


def _rss(server: RunningServer) -> int:
    pids = [server.proc.pid, *server.node_pids()]
    return sum(psutil.Process(pid).memory_info().rss for pid in pids)


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-a")
def test_overload_sheds_keeps_deadlines_and_memory_then_recovers(server: RunningServer) -> None:
    capacity = _capacity(server, "warm")
    deadline_ms = _deadline_ms(capacity)
    rss_before = _rss(server)
    rate = min(OVERLOAD_FACTOR * capacity, MAX_RATE)
    outcomes = run_load(server.url, _body("overload", deadline_ms=deadline_ms), rate_per_s=rate, duration_s=OVERLOAD_S,
                        workers=128)
    statuses = Counter(o.status for o in outcomes)
    # Shed (429/503), never a server error and never a request left to time out: admission sheds
    # what cannot get a slot in time, and a node sheds (503 cannot_meet_deadline) what its batch
    # could not finish before the deadline, instead of computing it for nothing. Under continuous
    # batching a row whose deadline passes while it decodes is retired then and answered 504: a
    # few of those are the estimate's misses, not requests left to time out.
    assert set(statuses) <= {200, 429, 503, 504}, statuses
    assert statuses[504] <= 0.02 * len(outcomes), statuses
    assert statuses[503] > 0 and statuses[200] > 0, statuses
    for shed in (o for o in outcomes if o.status == 503):
        assert shed.body["error"]["code"] == "overloaded", shed.body
    assert max(o.latency_s for o in outcomes) < deadline_ms / 1000.0 + max(1.0, SLOTS / capacity)  # + a step or a second
    assert {o.body["model"] for o in outcomes if o.ok} == {"quality"}, "overload alone must not open the breaker"
    rss_after = _rss(server)
    print(f"capacity {capacity:.1f} rps, deadline {deadline_ms:.0f} ms, load {rate:.1f} rps, {dict(statuses)}, "
          f"max latency {max(o.latency_s for o in outcomes):.2f} s, rss {rss_before >> 20} -> {rss_after >> 20} MiB")
    assert rss_after < 1.5 * rss_before + RSS_SLACK_BYTES

    calm = run_load(server.url, _body("calm", deadline_ms=deadline_ms), rate_per_s=max(1.0, capacity / 3), duration_s=8)
    after_5s = [o for o in calm if o.sent_s >= 5.0]
    assert after_5s and all(o.ok for o in after_5s), [(round(o.sent_s, 1), o.status) for o in calm]


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-a")
def test_overload_paid_keeps_its_slo_while_free_is_shed(server: RunningServer) -> None:
    capacity = _capacity(server, "warm-paid")
    deadline_ms = _deadline_ms(capacity)
    shed_before = sum(server.status()["shed"].values())
    rate = min(OVERLOAD_FACTOR * capacity, MAX_RATE)
    paid_every = 10  # paid is a tenth of the load: half the capacity at 5x

    def body(i: int) -> dict[str, Any]:
        priority = "paid" if i % paid_every == 0 else "free"
        return _body("mixed", priority=priority, tenant=f"{priority}-tenant", deadline_ms=deadline_ms)(i)

    outcomes = run_load(server.url, body, rate_per_s=rate, duration_s=OVERLOAD_S, workers=128)
    paid = [o for o in outcomes if o.index % paid_every == 0]
    free = [o for o in outcomes if o.index % paid_every != 0]
    paid_ok = [o for o in paid if o.ok]
    paid_refusals = Counter((o.status, (o.body.get("error") or {}).get("reason")) for o in paid if not o.ok)
    assert len(paid_ok) >= 0.9 * len(paid), (capacity, rate, paid_refusals)
    assert percentile([o.latency_s for o in paid_ok], 95) < deadline_ms / 1000.0
    free_shed = [o for o in free if o.status == 503]
    print(f"capacity {capacity:.1f} rps, deadline {deadline_ms:.0f} ms, load {rate:.1f} rps, paid {dict(Counter(o.status for o in paid))} "
          f"p95 {percentile([o.latency_s for o in paid_ok], 95):.2f} s, free {dict(Counter(o.status for o in free))}")
    assert len(free_shed) > 0.3 * len(free), Counter(o.status for o in free)
    shed = server.status()["shed"]
    assert sum(shed.values()) - shed_before >= len(free_shed)
    assert {o.body["error"]["reason"] for o in free_shed} <= {"early_reject", "max_wait", "queue_full", "cannot_meet_deadline"}
