"""Integration: a 2-node quality pool and a fast node on loopback, driven through the public API."""

from __future__ import annotations

import concurrent.futures
import re
import time
from collections.abc import Callable

import httpx
import pytest

from tests.support.server import RunningServer, pids_alive


def _metric(server: RunningServer, name: str, **labels: str) -> float:
    text = server.client.get("/metrics").text
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        match = re.match(rf"{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", line)
        if match and all(f'{k}="{v}"' in (match.group(1) or "") for k, v in labels.items()):
            total += float(match.group(2))
    return total


@pytest.mark.slow
def test_gateway_translates_and_reports_fields(shared_server: RunningServer) -> None:
    response = shared_server.translate("Good evening, the kitchen closes at ten.", target_lang="fr")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["translation"] and body["model"] == "quality" and body["chars"] == 40
    assert body["cached"] is False and body["degraded"] is False
    assert body["node"].startswith("quality-")
    assert set(body["timing"]) == {"queue_ms", "infer_ms", "total_ms"}


@pytest.mark.slow
def test_gateway_fast_mode_goes_to_fast_pool(shared_server: RunningServer) -> None:
    body = shared_server.translate("A fast one, please.", mode="fast").json()
    assert body["model"] == "fast" and body["node"].startswith("fast-")


@pytest.mark.slow
def test_gateway_cache_hit_after_first_answer(shared_server: RunningServer) -> None:
    first = shared_server.translate("Cache me if you can.").json()
    second = shared_server.translate("  Cache me   if you can. ").json()  # same after normalisation
    assert second["cached"] is True and second["translation"] == first["translation"]
    assert shared_server.status()["cache"]["hits"] >= 1


@pytest.mark.slow
def test_gateway_coalesces_identical_inflight_requests(shared_server: RunningServer) -> None:
    text = "Coalesce this long-ish sentence, several callers ask for it at once. " * 8
    before = shared_server.status()["cache"]["coalesced"]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda _: shared_server.translate(text).json(), range(8)))
    assert len({b["translation"] for b in bodies}) == 1
    after = shared_server.status()["cache"]["coalesced"]
    computed = sum(1 for b in bodies if not b["cached"])
    # Every caller that did not compute either shared the in-flight answer or hit the cache.
    assert after - before >= 1 or computed == 1


@pytest.mark.slow
def test_gateway_forms_batches_under_concurrency(shared_server: RunningServer) -> None:
    before_count = _metric(shared_server, "rushhour_batch_size_count", pool="quality")
    before_sum = _metric(shared_server, "rushhour_batch_size_sum", pool="quality")
    texts = [f"Distinct sentence number {i} goes to the model, with some padding words." for i in range(48)]
    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        statuses = list(pool.map(lambda t: shared_server.translate(t).status_code, texts))
    assert statuses.count(200) == len(texts)
    count = _metric(shared_server, "rushhour_batch_size_count", pool="quality") - before_count
    total = _metric(shared_server, "rushhour_batch_size_sum", pool="quality") - before_sum
    assert count == len(texts)
    assert total / count > 1.5, "requests arriving together should share batches"


@pytest.mark.slow
def test_gateway_drops_expired_requests_with_504(server_factory: Callable[..., RunningServer]) -> None:
    """Short requests queued behind long documents on busy nodes expire there and are never computed.
    (Dynamic batching queues them behind the documents; continuous batching would admit them.)"""
    server = server_factory({"pools": {"quality": {"batching": "dynamic"}}})
    long_text = "This document is long enough to keep the node busy for a while. " * 60
    expired_before = sum(n["expired"] for n in server.status()["nodes"])
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        busy = [pool.submit(server.translate, long_text + str(i), deadline_ms=60_000) for i in range(4)]
        # the documents must be at the nodes before the short requests leave, however busy the machine;
        # then a moment more for the node to close the documents' batch (10 ms after its first request)
        server.wait_for(lambda s: sum(n["inflight"] for n in s["nodes"]) >= len(busy), timeout_s=10.0,
                        interval_s=0.02)
        time.sleep(0.15)
        late = [pool.submit(server.translate, f"tiny {i}", deadline_ms=300) for i in range(6)]
        late_codes = [f.result().status_code for f in late]
        assert all(f.result().status_code == 200 for f in busy)
    assert late_codes.count(504) >= 1, late_codes
    assert set(late_codes) <= {200, 504}
    status = server.wait_for(lambda s: sum(n["expired"] for n in s["nodes"]) > expired_before)
    assert sum(n["expired"] for n in status["nodes"]) - expired_before <= late_codes.count(504)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "malformed_json"),
        (b"[1, 2]", 400, "malformed_body"),
        (b'{"source_lang": "en", "target_lang": "de"}', 422, "invalid_field"),
        (b'{"text": 5, "source_lang": "en", "target_lang": "de"}', 422, "invalid_field"),
        (b'{"text": "x", "source_lang": "en", "target_lang": "de", "mode": "turbo"}', 422, "invalid_field"),
        (b'{"text": "x", "source_lang": "en", "target_lang": "tlh"}', 422, "unsupported_language"),
        (b'{"text": "x", "source_lang": "en", "target_lang": "de", "priority": "vip"}', 422, "invalid_field"),
        (b'{"text": "' + b"a" * 6000 + b'", "source_lang": "en", "target_lang": "de"}', 413, "text_too_large"),
        (b'{"text": "' + b"a" * 70_000 + b'", "source_lang": "en", "target_lang": "de"}', 413, "body_too_large"),
    ],
)
@pytest.mark.slow
def test_gateway_bad_input_gets_json_error(shared_server: RunningServer, body: bytes, status: int, code: str) -> None:
    response = shared_server.client.post("/v1/translate", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["message"]


@pytest.mark.slow
def test_gateway_status_and_probes(shared_server: RunningServer) -> None:
    assert shared_server.client.get("/healthz").status_code == 200
    assert shared_server.client.get("/readyz").status_code == 200
    status = shared_server.status()
    assert {n["id"] for n in status["nodes"]} == {"quality-0", "quality-1", "fast-0"}
    for node in status["nodes"]:
        assert node["state"] == "ready" and node["breaker"] == "closed"
        assert node["provider"] == "CPUExecutionProvider"
        assert node["cold_start_s"] > 0
    assert "/v1/translate" in shared_server.client.get("/openapi.json").json()["paths"]
    metrics = shared_server.client.get("/metrics").text
    assert 'rushhour_execution_provider{node="quality-0",pool="quality",provider="CPUExecutionProvider"} 1.0' in metrics


@pytest.mark.slow
def test_gateway_stops_every_node_on_sigterm(server_factory) -> None:
    server = server_factory({"pools": {"quality": {"nodes": 1}, "fast": {"nodes": 1}}})
    assert server.translate("one more").status_code == 200
    pids = server.stop()
    assert len(pids) == 2
    assert pids_alive(pids) == []
    assert server.proc.returncode in (0, -15)  # uvicorn re-raises SIGTERM after its graceful shutdown


@pytest.mark.slow
def test_gateway_nodes_die_with_a_killed_gateway(server_factory) -> None:
    server = server_factory({"pools": {"quality": {"nodes": 1}, "fast": {"nodes": 0, "required": False}}})
    pids = server.node_pids()
    server.proc.kill()
    server.proc.wait()
    deadline = time.monotonic() + 5
    while pids_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids_alive(pids) == []


@pytest.mark.slow
def test_gateway_cold_start_reports_first_request(shared_server: RunningServer) -> None:
    assert shared_server.admin("POST", "/admin/nodes/quality-1/restart", json={"warm": False}).status_code == 200
    shared_server.wait_for(lambda s: all(n["state"] == "ready" for n in s["nodes"]))
    for i in range(6):
        assert shared_server.translate(f"wake up the cold node {i}").status_code == 200
    status = shared_server.wait_for(lambda s: next(n for n in s["nodes"] if n["id"] == "quality-1")["first_request_ms"] is not None)
    node = next(n for n in status["nodes"] if n["id"] == "quality-1")
    assert node["warm"] is False and node["first_request_ms"] is not None and node["restarts"] == 1
    with pytest.raises(httpx.HTTPStatusError):
        shared_server.admin("POST", "/admin/nodes/quality-1/restart", token=None).raise_for_status()
