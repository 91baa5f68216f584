"""Streaming metrics in reports: TTFT/TPOT/ITL SLOs, goodput per phase, the chart, the gate metric."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.reports.build import build_reports
from rushhour.reports.gate.compare import compare_runs
from rushhour.reports.gate.population import parse_population
from rushhour.reports.measures.goodput import per_request_good
from rushhour.reports.schema import SloSpec
from tests.reports.helpers import requests_frame, write_run

SLOS = [
    {"name": "ttft", "kind": "ttft", "percentile": 90, "threshold_ms": 500},
    {"name": "tpot", "kind": "tpot", "percentile": 90, "threshold_ms": 50},
    {"name": "stall", "kind": "itl", "itl_stat": "max", "percentile": 90, "threshold_ms": 800},
    {"name": "goodput", "kind": "goodput", "min_rps": 5.0},
]
EVENTS = [{"type": "phase", "name": "base", "start_s": 0.0, "end_s": 5.0},
          {"type": "phase", "name": "peak", "start_s": 5.0, "end_s": 10.0},
          {"type": "run_end", "duration_s": 10.0}]


def _streamed(ttft_scale: float = 1.0) -> pd.DataFrame:
    """100 requests over 10 s: in the peak (t >= 5 s) every 5th has a slow first token (900 ms)."""
    intended = np.arange(100) * 0.1
    slow = (intended >= 5.0) & (np.arange(100) % 5 == 0)
    ttft = np.where(slow, 900.0, 300.0) * ttft_scale
    frame = requests_frame(intended, ttft + 39 * 40.0, kind="short", tenant="t", via="openai-chat")
    return frame.assign(ttft_ms=ttft, tpot_ms=40.0, itl_p50_ms=15.0, itl_p99_ms=900.0, itl_max_ms=1000.0 - 300 * (~slow),
                        output_tokens=40.0, max_tokens=40, phase=np.where(intended < 5.0, "base", "peak"))


@pytest.mark.slow
def test_stream_slos_goodput_tables_and_chart(tmp_path: Path) -> None:
    root = write_run(tmp_path / "run", _streamed(), scenario={"slos": SLOS}, events=EVENTS)
    summary = build_reports(root)
    slos = {slo["name"]: slo for slo in summary["slos"]}
    assert slos["ttft"]["met"] and slos["ttft"]["good_share"] == pytest.approx(0.9)  # 10 slow of 100
    assert slos["tpot"]["met"] and slos["stall"]["good_share"] == pytest.approx(0.9)
    peak = next(p for p in slos["ttft"]["phases"] if p["phase"] == "peak")
    assert not peak["met"] and peak["good_share"] == pytest.approx(0.8)
    goodput = summary["goodput"]
    assert goodput["rps"] == pytest.approx(9.0) and goodput["good"] == 90
    assert [(p["phase"], p["rps"]) for p in goodput["phases"]] == [("base", pytest.approx(10.0)), ("peak", pytest.approx(8.0))]
    assert slos["goodput"]["met"] and slos["goodput"]["measured"] == pytest.approx(9.0)
    assert summary["streaming"]["metrics"]["ttft_ms"]["p50"] == 300.0
    assert summary["streaming"]["output_tokens"]["total"] == 4000
    html = (root / "report.html").read_text()
    assert "Goodput" in html and "TTFT and TPOT over time" in html and "time to first token" in html
    assert "TTFT P90 &lt;= 500 ms" in html and "goodput &gt;= 5 req/s" in html
    assert "Goodput: 9.00 req/s" in (root / "report.md").read_text()
    json.loads((root / "summary.json").read_text())


def test_a_request_without_a_first_token_misses_a_ttft_objective() -> None:
    frame = _streamed().assign(ttft_ms=np.nan, ok=True)
    specs = [SloSpec.model_validate(SLOS[0])]
    assert not per_request_good(frame, frame["phase"], specs).any()


def test_the_gate_compares_a_chosen_metric(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", _streamed(), scenario={"slos": SLOS}, events=EVENTS)
    worse = write_run(tmp_path / "worse", _streamed(ttft_scale=1.5), scenario={"slos": SLOS}, events=EVENTS)
    on_ttft = compare_runs(base, worse, population=parse_population("by=none,metric=ttft_ms,p=90"))
    assert on_ttft.regression and "ttft_ms" in on_ttft.decision.population
    assert any(row["metric"] == "P99 TTFT (ms)" for row in on_ttft.rows)
    on_tpot = compare_runs(base, worse, population=parse_population("by=none,metric=tpot_ms,p=90"))
    assert not on_tpot.regression
