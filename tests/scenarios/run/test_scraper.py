"""The scraper turns one /v1/status document into one row per pool."""

from __future__ import annotations

import math
from typing import Any, cast

import pytest

from rushhour.scenarios.run.scraper import METRIC_COLUMNS, metrics_frame, status_rows


def _status(batches: int, items: int, requests: int) -> dict:
    return {
        "ready": True, "uptime_s": 12.0, "provider": "CPUExecutionProvider",
        "pools": {
            "quality": {"nodes_alive": 2, "nodes_ready": 1, "breakers_open": 1, "queue_depth": 7,
                        "inflight": 3, "batches_total": batches, "batch_items_total": items},
            "fast": {"nodes_alive": 1, "nodes_ready": 1, "breakers_open": 0, "queue_depth": 0,
                     "inflight": 0, "batches_total": 0, "batch_items_total": 0},
        },
        "nodes": [{"id": "quality-0", "pool": "quality", "state": "ready", "breaker": "open",
                   "provider": "CUDAExecutionProvider", "batching": "continuous, chunked prefill 32 tokens/step"}],
        "cache": {"entries": 10, "hits": 5, "misses": 7, "coalesced": 1},
        "shed": {"rate_limited": 1, "queue_full": 2, "deadline": 3, "unavailable": 4},
        "requests_total": requests,
    }


def test_status_rows_one_row_per_pool_with_shared_counters() -> None:
    rows = status_rows(_status(10, 40, 100), None, 3.0)
    by_pool = {row["pool"]: row for row in rows}
    assert set(by_pool) == {"quality", "fast"}
    quality = by_pool["quality"]
    assert (quality["nodes_alive"], quality["nodes_ready"], quality["breakers_open"]) == (2, 1, 1)
    assert (quality["queue_depth"], quality["inflight"]) == (7, 3)
    assert quality["provider"] == "CUDAExecutionProvider"
    assert by_pool["fast"]["provider"] == "CPUExecutionProvider"
    assert quality["batching"] == "continuous, chunked prefill 32 tokens/step" and by_pool["fast"]["batching"] == ""
    for row in rows:
        assert (row["cache_hits_total"], row["cache_misses_total"]) == (5, 7)
        assert row["shed_total"] == 10 and row["requests_total"] == 100
        assert math.isnan(cast(float, row["batch_size_mean"]))  # no previous scrape, no interval


def test_status_rows_batch_size_mean_from_counter_deltas() -> None:
    rows = status_rows(_status(15, 60, 130), _status(10, 40, 100), 4.0)
    by_pool = {row["pool"]: row for row in rows}
    assert by_pool["quality"]["batch_size_mean"] == 4.0  # 20 items over 5 batches
    assert math.isnan(cast(float, by_pool["fast"]["batch_size_mean"]))


def test_metrics_frame_has_contract_columns_even_empty() -> None:
    assert list(metrics_frame([]).columns) == list(METRIC_COLUMNS)
    frame = metrics_frame(status_rows(_status(1, 1, 1), None, 0.0))
    assert list(frame.columns) == list(METRIC_COLUMNS) and len(frame) == 2


def test_scraper_copies_server_events_once_each() -> None:
    import httpx

    from rushhour.scenarios.run.scraper import StatusScraper

    served: list[dict[str, Any]] = [{"seq": 1, "wall": 100.0, "type": "node_down", "node": "quality-0"},
              {"seq": 2, "wall": 101.0, "type": "scale", "pool": "quality", "nodes": 3, "reason": "queue"}]

    def handler(request: httpx.Request) -> httpx.Response:
        after = int(request.url.params["after"])
        return httpx.Response(200, json={"events": [e for e in served if e["seq"] > after]})

    seen: list = []
    scraper = StatusScraper("http://127.0.0.1:9", origin=0.0, on_server_event=seen.append)
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        scraper._pull_events(client)
        scraper._pull_events(client)
    assert [e.kind for e in seen] == ["node_down", "scale"]


def test_scraper_stops_asking_a_target_without_events() -> None:
    import httpx

    from rushhour.scenarios.run.scraper import StatusScraper

    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(404, json={"detail": "Not Found"})

    scraper = StatusScraper("http://127.0.0.1:9", origin=0.0, on_server_event=lambda e: None)
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        scraper._pull_events(client)
        scraper._pull_events(client)
    assert len(calls) == 1


def test_scraper_reports_a_failing_events_endpoint_rate_limited() -> None:
    import httpx

    from rushhour.scenarios.run.scraper import StatusScraper

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/events":
            return httpx.Response(500, json={"error": {"code": "internal", "message": "no seq"}})
        return httpx.Response(200, json=_status(1, 1, 1))

    errors: list[dict] = []
    scraper = StatusScraper("http://127.0.0.1:9", origin=0.0, on_server_event=lambda e: None, on_error=errors.append)
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        for _ in range(5):
            scraper._scrape(client)
    assert len(errors) == 1  # the first failure at once, the rest held back by the rate limit
    assert errors[0]["endpoint"] == "/v1/events" and "answered 500" in str(errors[0]["reason"])
    scraper.stop()
    assert [e["errors"] for e in errors] == [1, 4] and errors[-1]["total"] == 5
    assert scraper.summary() == {"samples": 5, "errors": {"/v1/events": 5}, "failed": 5}


def test_scraper_reports_an_unreachable_status_endpoint() -> None:
    import httpx

    from rushhour.scenarios.run.scraper import StatusScraper

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused", request=request)

    errors: list[dict] = []
    scraper = StatusScraper("http://127.0.0.1:9", origin=0.0, on_error=errors.append)
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        scraper._scrape(client)
    assert errors[0]["endpoint"] == "/v1/status" and "ConnectError" in str(errors[0]["reason"])


def test_error_reporter_reports_again_after_its_interval() -> None:
    from rushhour.scenarios.run.poller import ErrorReporter

    now = [0.0]
    sent: list[dict] = []
    reporter = ErrorReporter(sent.append, every_s=10.0, clock=lambda: now[0])
    for t in (0.0, 1.0, 2.0, 10.5, 11.0):
        now[0] = t
        reporter.failed("/v1/status", f"down at {t}")
    reporter.flush()
    assert [(e["errors"], e["reason"]) for e in sent] == [(1, "down at 0.0"), (3, "down at 10.5"), (1, "down at 11.0")]


def test_scraper_ignores_proxy_variables_for_a_loopback_target(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from rushhour.scenarios.run.scraper import StatusScraper
    from tests.support.stub import Answer, stub_server

    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    routes: dict[str, Answer] = {"/v1/status": (200, {}, _status(1, 1, 1)), "/v1/events": (200, {}, {"events": []})}
    errors: list[dict] = []
    with stub_server(routes) as (url, asked):
        scraper = StatusScraper(url, origin=0.0, interval_s=0.1, on_server_event=lambda e: None, on_error=errors.append)
        scraper.start()
        give_up = time.monotonic() + 10
        while scraper.samples < 2 and time.monotonic() < give_up:
            time.sleep(0.05)
        scraper.stop()
    assert errors == [] and scraper.samples >= 2 and "/v1/events" in asked


def test_scraper_does_not_follow_a_redirect() -> None:
    from rushhour.scenarios.run.scraper import StatusScraper
    from tests.support.stub import Answer, stub_server

    routes: dict[str, Answer] = {"/v1/status": (302, {"Location": "http://redirected.invalid/v1/status"}, {})}
    errors: list[dict] = []
    with stub_server(routes) as (url, asked):
        scraper = StatusScraper(url, origin=0.0, on_error=errors.append)
        with scraper.client() as client:
            scraper._scrape(client)
    assert asked == ["/v1/status"] and "answered 302" in str(errors[0]["reason"])
