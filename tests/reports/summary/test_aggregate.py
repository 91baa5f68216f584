from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rushhour.reports.rundata.results import load_run
from rushhour.reports.summary.aggregate import summarise
from tests.reports.helpers import requests_frame, write_run


def _run(tmp_path: Path, events: list[dict] | None = None, scenario: dict | None = None) -> dict:
    frame = requests_frame(np.arange(10.0), np.arange(1.0, 11.0) * 100)  # 100..1000 ms
    frame["sent_s"] = frame["intended_s"] + 0.010  # sent 10 ms late
    frame["service_ms"] = frame["latency_ms"] - 10.0
    frame.loc[7, ["ok", "status"]] = [False, 429]
    frame.loc[8, ["ok", "status"]] = [False, 503]
    frame.loc[9, ["ok", "status", "done_s", "latency_ms", "service_ms"]] = [False, 0, np.nan, np.nan, np.nan]
    return summarise(load_run(write_run(tmp_path / "run", frame, events=events, scenario=scenario)))


def test_counts_throughput_and_both_latency_views(tmp_path: Path) -> None:
    # Latency covers every attempt: the 429 and 503 count at their end (800 and
    # 900 ms) and the unanswered row 9 (sent, no end) at the run end, 10 s: 1000 ms.
    summary = _run(tmp_path, events=[{"type": "run_end", "t_s": 10.0, "duration_s": 10.0}])
    assert summary["requests"] == {"scheduled": 10, "sent": 10, "attempted": 10, "not_sent": 0,
                                   "completed": 9, "ok": 7, "failed": 3, "end_imputed": 1,
                                   "shed": 2, "degraded": 0, "cached": 0}
    assert summary["throughput_rps"] == pytest.approx(0.7)
    assert summary["latency_ms"]["p50"] == 500.0  # attempts 100..1000, rank 5
    assert summary["latency_ok_only_ms"]["p50"] == 400.0  # ok latencies 100..700, rank ceil(3.5) = 4
    assert summary["latency_uncorrected_ms"]["p50"] == 490.0
    assert summary["latency_ms"]["p99"] == 1000.0
    assert summary["latency_detail"]["corrected"]["p99"]["trusted"] is False


def test_not_sent_rows_stay_out_of_latency_and_are_counted(tmp_path: Path) -> None:
    frame = requests_frame(np.arange(4.0), [100.0, 200.0, 300.0, 400.0])
    frame.loc[3, ["sent_s", "done_s", "latency_ms", "service_ms", "ok", "status"]] = [
        np.nan, np.nan, np.nan, np.nan, False, 0]
    summary = summarise(load_run(write_run(tmp_path / "run", frame)))
    assert summary["requests"]["not_sent"] == 1 and summary["requests"]["attempted"] == 3
    assert summary["requests"]["failed"] == 0 and summary["requests"]["end_imputed"] == 0
    assert summary["latency_detail"]["corrected"]["p50"]["samples"] == 3


def test_throughput_counts_only_the_schedule_window(tmp_path: Path) -> None:
    # 10 ok answers at 1/s inside a 10 s schedule; the run lasts 11 s with teardown.
    frame = requests_frame(np.arange(10.0), np.full(10, 100.0))
    events = [{"type": "run_end", "t_s": 11.0, "duration_s": 11.0}]
    summary = summarise(load_run(write_run(tmp_path / "run", frame, events=events)))
    assert summary["throughput_rps"] == pytest.approx(1.0)
    assert summary["throughput_window_s"] == [0.0, 10.0]


def test_generator_lag_and_a_run_without_slos_judged_on_implicit_availability(tmp_path: Path) -> None:
    summary = _run(tmp_path)  # 7 of 10 ok, and the scenario states no SLO
    assert summary["generator"]["schedule_lag_p99_ms"] == pytest.approx(10.0)
    assert summary["generator"]["valid"] and summary["verdict"] == "fail"
    assert [slo["name"] for slo in summary["slos"]] == ["availability (implicit)"] and summary["slos"][0]["implicit"]
    assert "implicit availability" in summary["implicit_slo"]
    assert {"server_metrics.parquet", "events.jsonl"} <= set(summary["missing"])


def test_a_run_without_slos_where_every_request_failed_never_passes(tmp_path: Path) -> None:
    frame = requests_frame(np.arange(50.0) / 5, np.full(50, 30.0), ok=np.zeros(50, bool))
    summary = summarise(load_run(write_run(tmp_path / "run", frame)))
    assert summary["verdict"] == "fail" and "availability (implicit)" in summary["verdict_reason"]
    healthy = summarise(load_run(write_run(tmp_path / "ok", requests_frame(np.arange(50.0) / 5, np.full(50, 30.0)))))
    assert healthy["verdict"] == "pass" and "implicit" in healthy["verdict_reason"]


def test_a_run_whose_every_request_failed_fails_whatever_its_slos_say(tmp_path: Path) -> None:
    frame = requests_frame(np.arange(50.0) / 5, np.full(50, 30.0), ok=np.zeros(50, bool))
    degraded_only = {"slos": [{"name": "degraded", "kind": "degraded", "max_share": 0.1}]}  # counts answers only
    summary = summarise(load_run(write_run(tmp_path / "run", frame, scenario=degraded_only)))
    assert summary["verdict"] == "fail" and "Every one of the 50" in summary["verdict_reason"]


def test_generator_cpu_saturation_makes_run_invalid(tmp_path: Path) -> None:
    summary = _run(tmp_path, events=[{"type": "generator", "t_s": 9.0, "cpu_max": 0.97}])
    assert summary["generator"]["valid"] is False and summary["verdict"] == "invalid"
    assert "not the server" in summary["verdict_reason"]


def test_lag_limit_comes_from_scenario_load_block(tmp_path: Path) -> None:
    summary = _run(tmp_path, scenario={"load": {"max_lag_p99_ms": 5}})
    assert summary["verdict"] == "invalid"
    assert "above the 5 ms limit" in summary["verdict_reason"]
