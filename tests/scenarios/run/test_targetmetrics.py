"""The target-metrics scraper against a ground-truth Prometheus endpoint whose gauges it sets."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

from rushhour.kernel.contract import TARGET_METRICS_FILE
from rushhour.scenarios.run.targetmetrics import (
    MAX_SERIES_PER_METRIC,
    TargetMetricsScraper,
    sample_rows,
    target_metrics_frame,
)
from tests.scenarios.run.truth_metrics import TruthServer


@pytest.fixture
def truth() -> Iterator[TruthServer]:
    server = TruthServer()
    try:
        yield server
    finally:
        server.stop()


def _values(scraper: TargetMetricsScraper, metric: str) -> list[tuple[float, str, float]]:
    frame = scraper.frame()
    rows = frame[frame["metric"] == metric]
    return list(zip(rows["t_s"], rows["labels"], rows["value"]))


def test_scrape_records_the_gauges_values_labels_and_times(truth: TruthServer) -> None:
    origin = time.time()
    scraper = TargetMetricsScraper(truth.url, origin=origin)
    with httpx.Client() as client:
        truth.running.labels(model_name="m").set(3)
        before = time.time() - origin
        assert scraper.scrape_once(client)
        truth.running.labels(model_name="m").set(7)
        truth.tokens.inc(120)
        assert scraper.scrape_once(client)
        after = time.time() - origin
    running = _values(scraper, "vllm:num_requests_running")
    assert [(labels, value) for _, labels, value in running] == [('{"model_name": "m"}', 3.0),
                                                                  ('{"model_name": "m"}', 7.0)]
    assert before <= running[0][0] <= running[1][0] <= after
    assert [value for _, _, value in _values(scraper, "vllm:generation_tokens_total")] == [0.0, 120.0]
    metrics = set(scraper.frame()["metric"])
    assert "vllm:e2e_request_latency_seconds_sum" in metrics
    assert not any(name.endswith(("_bucket", "_created")) for name in metrics)


def test_a_target_that_stops_answering_is_recorded_never_fatal(truth: TruthServer) -> None:
    reported: list[dict[str, object]] = []
    scraper = TargetMetricsScraper(truth.url, origin=time.time(), on_error=reported.append)
    truth.running.labels(model_name="m").set(5)
    with httpx.Client(timeout=0.5) as client:
        assert scraper.scrape_once(client)
        truth.stop()
        assert not scraper.scrape_once(client)
        assert not scraper.scrape_once(client)
    scraper.errors.flush()
    assert [value for _, _, value in _values(scraper, "vllm:num_requests_running")] == [5.0]
    assert scraper.summary()["samples"] == 1 and scraper.summary()["failed"] == 2
    assert reported and reported[0]["endpoint"] == "target metrics"
    assert str(truth.port) in str(reported[0]["reason"])
    assert sum(int(str(r["errors"])) for r in reported) == 2


def test_the_thread_keeps_scraping_and_stops_cleanly(truth: TruthServer) -> None:
    truth.running.labels(model_name="m").set(2)
    scraper = TargetMetricsScraper(truth.url, origin=time.time(), interval_s=0.05)
    scraper.start()
    deadline = time.monotonic() + 5.0
    while scraper.samples < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    scraper.stop()
    times = [t for t, _, _ in _values(scraper, "vllm:num_requests_running")]
    assert len(times) >= 3 and times == sorted(times)


def test_label_sets_are_bounded_per_metric() -> None:
    lines = [f'req{{id="{i}"}} 1' for i in range(MAX_SERIES_PER_METRIC + 10)]
    text = "# TYPE req gauge\n" + "\n".join(lines) + "\n# TYPE up gauge\nup 1\n"
    known: dict[str, set[str]] = {}
    rows, dropped = sample_rows(text, 1.5, known)
    assert dropped == 10
    assert sum(row["metric"] == "req" for row in rows) == MAX_SERIES_PER_METRIC
    assert {"t_s": 1.5, "metric": "up", "labels": "{}", "value": 1.0} in rows
    again, dropped_again = sample_rows(text, 2.5, known)
    assert dropped_again == 10 and len(again) == len(rows)
    assert json.loads(str(rows[0]["labels"])) == {"id": "0"}


def test_frame_has_the_contract_columns_even_when_empty() -> None:
    frame = target_metrics_frame([])
    assert list(frame.columns) == ["t_s", "metric", "labels", "value"]
    assert str(frame["t_s"].dtype) == "float64" and str(frame["value"].dtype) == "float64"


def test_write_into_puts_the_samples_in_the_results_folder(truth: TruthServer, tmp_path: Path) -> None:
    truth.running.labels(model_name="m").set(4)
    scraper = TargetMetricsScraper(truth.url, origin=time.time())
    with httpx.Client() as client:
        scraper.scrape_once(client)
    scraper.write_into(tmp_path)
    frame = pd.read_parquet(tmp_path / TARGET_METRICS_FILE)
    assert frame[frame["metric"] == "vllm:num_requests_running"]["value"].tolist() == [4.0]
