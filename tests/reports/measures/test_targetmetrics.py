"""The target's own metrics in the report: recognised series, named metrics, failures shown."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.reports import build_reports
from rushhour.reports.measures.targetmetrics import hit_ratio, named_series, rate, recognised_series
from tests.reports.helpers import requests_frame, write_run


def _samples(rows: list[tuple[float, str, dict[str, str], float]]) -> pd.DataFrame:
    return pd.DataFrame([{"t_s": t, "metric": m, "labels": json.dumps(labels, sort_keys=True), "value": v}
                         for t, m, labels, v in rows])


def test_counter_rate_per_second_with_a_reset_as_a_gap() -> None:
    series = pd.Series([0.0, 100.0, 300.0, 10.0, 30.0], index=[0.0, 1.0, 3.0, 4.0, 5.0])
    result = rate(series).to_numpy()
    assert np.isnan(result[0]) and np.isnan(result[3])
    assert result[[1, 2, 4]].tolist() == [100.0, 100.0, 20.0]


def test_recognised_series_from_vllm_and_sglang_names() -> None:
    frame = _samples([
        (1.0, "vllm:num_requests_running", {"model_name": "a"}, 2.0),
        (1.0, "vllm:num_requests_running", {"model_name": "b"}, 3.0),
        (2.0, "vllm:num_requests_running", {"model_name": "a"}, 4.0),
        (1.0, "vllm:kv_cache_usage_perc", {}, 0.25), (2.0, "vllm:kv_cache_usage_perc", {}, 0.5),
        (1.0, "vllm:generation_tokens_total", {}, 100.0), (2.0, "vllm:generation_tokens_total", {}, 160.0),
        (1.0, "vllm:prefix_cache_hits_total", {}, 0.0), (2.0, "vllm:prefix_cache_hits_total", {}, 30.0),
        (1.0, "vllm:prefix_cache_queries_total", {}, 0.0), (2.0, "vllm:prefix_cache_queries_total", {}, 40.0),
        (1.0, "sglang:num_queue_reqs", {}, 7.0),
        (1.0, "some_other_metric", {}, 1.0),
    ])
    charts = recognised_series(frame)
    assert set(charts) == {"target_requests", "target_kv_cache", "target_tokens", "target_prefix_cache"}
    assert charts["target_requests"]["running (vLLM)"].tolist() == [5.0, 4.0]
    assert charts["target_requests"]["waiting (SGLang)"].tolist() == [7.0]
    assert charts["target_kv_cache"]["KV cache (vLLM)"].tolist() == [0.25, 0.5]
    assert charts["target_tokens"]["generated (vLLM)"].iloc[1] == 60.0
    assert charts["target_prefix_cache"]["prefix-cache hit ratio (vLLM)"].iloc[1] == 0.75
    assert hit_ratio(frame, "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total").isna().iloc[0]


def test_named_metric_one_line_per_label_set() -> None:
    frame = _samples([(1.0, "queue_depth", {"pool": "a"}, 1.0), (1.0, "queue_depth", {"pool": "b"}, 2.0),
                      (2.0, "queue_depth", {"pool": "a"}, 3.0)])
    lines = named_series(frame, "queue_depth")
    assert {key: series.tolist() for key, series in lines.items()} == {
        'queue_depth {"pool": "a"}': [1.0, 3.0], 'queue_depth {"pool": "b"}': [2.0]}


@pytest.fixture
def run_with_target_metrics(tmp_path: Path) -> Path:
    intended = np.arange(0.0, 60.0, 0.1)
    requests = requests_frame(intended, np.where(intended < 10.0, 900.0, 100.0),
                              output_tokens=np.full(intended.size, 50.0))
    root = write_run(tmp_path / "run", requests, scenario={
        "traffic": {"model": "flat", "duration_s": 60.0},
        "target": {"url": "http://127.0.0.1:9", "metrics_url": "http://127.0.0.1:9/metrics",
                   "metrics": ["custom_gauge", "absent_metric"]},
        "slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 500, "steady_only": True}],
        "cost": {"source": "test", "date": "2026-12-01", "pools": {"quality": {"usd_per_node_hour": 3.6}}},
    }, events=[
        {"type": "target_metrics_error", "t_s": 30.0, "endpoint": "target metrics",
         "reason": "GET http://127.0.0.1:9/metrics failed: ConnectError", "errors": 1, "total": 1},
        {"type": "target_metrics", "t_s": 60.0, "url": "http://127.0.0.1:9/metrics", "samples": 29,
         "failed": 1, "dropped_series_samples": 0},
        {"type": "run_end", "t_s": 60.0, "duration_s": 60.0},
    ], metrics=pd.DataFrame({"t_s": np.arange(0.0, 61.0), "pool": "quality", "nodes_alive": 1}))
    rows: list[tuple[float, str, dict[str, str], float]] = [
        (float(t), "vllm:num_requests_running", {}, float(t % 5)) for t in range(30)]
    rows += [(float(t), "custom_gauge", {"k": "v"}, 2.0) for t in range(30)]
    _samples(rows).to_parquet(root / "target_metrics.parquet", index=False)
    return root


def test_report_shows_target_metrics_steady_slo_and_token_cost(run_with_target_metrics: Path) -> None:
    summary = build_reports(run_with_target_metrics)
    target = summary["target_metrics"]
    assert target["failed"] == 1 and target["recognised"] == ["vllm:num_requests_running"]
    assert target["named"] == [{"metric": "custom_gauge", "found": True}, {"metric": "absent_metric", "found": False}]
    [slo] = summary["slos"]
    assert slo["judged_over"] == "steady windows" and slo["met"] is True
    assert slo["whole_run"]["met"] is False
    assert summary["steady"]["windows"][0]["steady_start_s"] == pytest.approx(10.0)
    output = summary["cost"]["tokens"]["output"]
    # 60 s of one node at 3.6 USD/h = 0.06 USD over 600 answers of 50 tokens: 2.0 USD per 1M
    assert output["whole"]["usd_per_1m"] == pytest.approx(2.0)
    html = (run_with_target_metrics / "report.html").read_text()
    assert 'id="chart-target_requests"' in html and 'id="chart-target_custom_gauge"' in html
    assert "The target published no sample named &#34;absent_metric&#34;." in html
    assert "failed 1 time(s)" in html and "Steady state" in html and "per 1M output tokens" in html
    assert "per 1M output tokens" in (run_with_target_metrics / "report.md").read_text()
