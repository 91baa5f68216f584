"""Live SLO measurement: histogram quantiles, metrics deltas and the live results file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rushhour.experiments.client import AdminClient
from rushhour.experiments.live import (
    LIVE_ENV,
    histogram_quantile,
    is_error_status,
    stats_from_file,
    stats_from_metrics,
)
from rushhour.experiments.local import probes

INF = float("inf")


def test_histogram_quantile_interpolates_inside_the_bucket() -> None:
    buckets = [(0.1, 50.0), (0.5, 90.0), (1.0, 100.0), (INF, 100.0)]
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.1)
    assert histogram_quantile(0.99, buckets) == pytest.approx(0.5 + 0.5 * 9 / 10)
    assert histogram_quantile(0.99, []) == 0.0
    assert histogram_quantile(0.99, [(0.1, 0.0), (INF, 0.0)]) == 0.0


def test_histogram_quantile_in_the_open_bucket_answers_the_largest_bound() -> None:
    assert histogram_quantile(0.99, [(0.1, 10.0), (1.0, 50.0), (INF, 100.0)]) == 1.0


def test_error_statuses_are_the_services_failures() -> None:
    assert [is_error_status(s) for s in (0, "200", 429, "503", 504, "5xx")] == [
        True, False, True, True, True, True,
    ]
    assert not any(is_error_status(s) for s in (400, 413, 422, "ok"))


def test_stats_from_metrics_judge_only_the_window(fake_cluster: Any) -> None:
    cluster, config, _ = fake_cluster
    cluster.buckets = {0.1: 1000.0, 0.5: 1000.0, 1.0: 1000.0, INF: 1000.0}
    cluster.by_status = {"200": 1000.0, "503": 0.0}
    cluster.traffic_per_scrape = ({0.1: 50.0, 0.5: 90.0, 1.0: 100.0, INF: 100.0}, {"200": 95.0, "503": 5.0})
    stats = stats_from_metrics(AdminClient(url=config["rushhour_url"]), 0.01)
    assert stats.requests == 100
    assert stats.error_rate == pytest.approx(0.05)
    assert stats.p99_ms == pytest.approx(950.0)


def _rows(n: int, *, t0: float, latency_ms: float, status: int) -> list[dict[str, Any]]:
    return [
        {"intended_s": t0 + i * 0.01, "done_s": t0 + i * 0.01 + latency_ms / 1000,
         "latency_ms": latency_ms, "status": status, "ok": status == 200}
        for i in range(n)
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_stats_from_file_use_only_the_last_window(tmp_path: Path, suffix: str) -> None:
    rows = _rows(100, t0=0.0, latency_ms=5000.0, status=503) + _rows(
        100, t0=100.0, latency_ms=20.0, status=200
    )
    rows[-1].update(latency_ms=80.0, status=0, ok=False)
    path = tmp_path / f"live{suffix}"
    if suffix == ".parquet":
        pd.DataFrame(rows).to_parquet(path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn')
    stats = stats_from_file(path, window_s=10.0)
    assert stats.requests == 100
    assert stats.error_rate == pytest.approx(0.01)
    assert stats.p99_ms == 20.0  # nearest rank: the 99th of 100 sorted latencies, as the report computes it


def test_slo_met_reads_the_live_file_named_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "live.jsonl"
    rows = _rows(50, t0=0.0, latency_ms=300.0, status=200)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv(LIVE_ENV, str(path))
    config = {"rushhour_url": "http://127.0.0.1:9"}  # never contacted: the file answers
    assert probes.slo_met(p99_ms=500, max_error_rate=0.0, window_s=5, configuration=config)
    assert not probes.slo_met(p99_ms=200, max_error_rate=0.0, window_s=5, configuration=config)
    assert probes.p99_latency_ms(window_s=5, configuration=config) == pytest.approx(300.0)
    assert probes.error_rate(window_s=5, configuration=config) == 0.0


def test_stats_from_a_drills_part_folder_count_failures_at_their_end(tmp_path: Path) -> None:
    """A drill points RUSHHOUR_LIVE at its workers' parts: latency is end minus intended, failures included."""
    parts = tmp_path / "parts"
    parts.mkdir()
    intended = np.arange(100, dtype=float) * 0.1  # 10 s of traffic
    done = intended + 0.050
    status = np.full(100, 200)
    done[-5:] = intended[-5:] + 2.0  # the last five time out after 2 s
    status[-5:] = 0
    frame = pd.DataFrame({"row": np.arange(100), "intended_s": intended, "done_s": done, "status": status})
    frame.iloc[:50].to_parquet(parts / "part-w0-0.parquet")
    frame.iloc[50:].to_parquet(parts / "part-w0-1.parquet")
    stats = stats_from_file(parts, window_s=5.0)
    # the newest end is 9.9 + 2.0 = 11.9 s: rows ending at or after 6.9 s are 26 answers and 5 timeouts
    assert stats.requests == 31
    assert stats.error_rate == pytest.approx(5 / 31)
    assert stats.p99_ms == pytest.approx(2000.0)
