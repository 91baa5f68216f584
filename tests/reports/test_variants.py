"""The policy comparison on synthetic variant results, with hand-computed answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from rushhour.reports.build import _json_safe
from rushhour.reports.rundata.results import ResultsError, load_run
from rushhour.reports.variants import (
    cheapest_passing,
    comparison_dict,
    peak_phase,
    read_comparison,
    variant_row,
    write_comparison,
)
from rushhour.reports.variants_model import ComparisonDocument
from tests.reports.helpers import requests_frame, write_run

PHASES = [{"type": "phase", "t_s": 0.0, "name": "base", "start_s": 0.0, "end_s": 8.0},
          {"type": "phase", "t_s": 8.0, "name": "promo", "start_s": 8.0, "end_s": 10.0}]


def _summary(verdict: str, total_usd: float | None, per_1k: float | None, *, p99_met: bool = True) -> dict[str, Any]:
    return {
        "verdict": verdict, "verdict_reason": f"synthetic {verdict}", "latency_ms": {"p99": 100.0},
        "slos": [{"name": "p99", "kind": "latency", "met": p99_met, "measured": 100.0, "objective_text": "P99 <= 500 ms"},
                 {"name": "availability", "kind": "availability", "met": True, "measured": 1.0,
                  "objective_text": ">= 99%"}],
        "faults": [{"name": "gpu-node-loss", "recovered": True, "recovery_s": 4.5, "failed_requests": 3}],
        "cost": {"total_usd": total_usd, "usd_per_1k_chars": per_1k},
        "requests": {"scheduled": 10},
    }


def _variant(root: Path, nodes: int, summary: dict[str, Any]) -> Path:
    """8 requests at 1/s in `base` (fast), 4 in the 2 s `promo` (slow: 200..500 ms)."""
    intended = np.r_[np.arange(8.0), 8.0, 8.5, 9.0, 9.5]
    latency = np.r_[np.full(8, 10.0), [200.0, 300.0, 400.0, 500.0]]
    requests = requests_frame(intended, latency, phase=["base"] * 8 + ["promo"] * 4)
    t = np.arange(10.0)
    metrics = pd.concat([pd.DataFrame({"t_s": t, "pool": "quality", "nodes_alive": nodes}),
                         pd.DataFrame({"t_s": t, "pool": "fast", "nodes_alive": 1})])
    write_run(root, requests, events=PHASES, metrics=metrics)
    (root / "summary.json").write_text(json.dumps(summary))
    return root


def test_variants_peak_phase_is_the_busiest_per_second(tmp_path: Path) -> None:
    root = _variant(tmp_path / "a", 1, _summary("pass", 1.0, 0.1))
    assert peak_phase(load_run(root)) == "promo"  # 4 requests in 2 s beats 8 in 8 s


def test_variants_peak_phase_of_an_aborted_run_without_later_phase_events(tmp_path: Path) -> None:
    root = _variant(tmp_path / "a", 1, _summary("invalid", 1.0, 0.1))
    (root / "events.jsonl").write_text(json.dumps(PHASES[0] | {"wall": "2026-01-01T00:00:00Z"}) + "\n")
    assert peak_phase(load_run(root)) == "promo"  # 4 arrivals over 1.5 s of intended times


def test_variants_row_has_peak_p99_and_node_hours(tmp_path: Path) -> None:
    row = variant_row("a", _variant(tmp_path / "a", 3, _summary("pass", 1.0, 0.1)))
    assert row["peak_phase"] == "promo" and row["p99_peak_ms"] == 500.0
    assert row["node_hours"] == pytest.approx({"quality": 30 / 3600, "fast": 10 / 3600})
    assert row["faults"][0]["recovery_s"] == 4.5 and row["verdict"] == "pass"


def test_variants_cheapest_passing_skips_failed_and_invalid() -> None:
    rows = [{"name": "static-3", "verdict": "pass", "total_usd": 0.30, "usd_per_1k_chars": 0.03},
            {"name": "reactive", "verdict": "fail", "total_usd": 0.10, "usd_per_1k_chars": 0.01},
            {"name": "predictive", "verdict": "pass", "total_usd": 0.20, "usd_per_1k_chars": 0.02},
            {"name": "broken", "verdict": "invalid", "total_usd": 0.05, "usd_per_1k_chars": 0.005}]
    assert cheapest_passing(rows) == "predictive"
    assert cheapest_passing([rows[1], rows[3]]) is None


def test_variants_cost_tie_is_broken_by_cost_per_1k() -> None:
    rows = [{"name": "a", "verdict": "pass", "total_usd": 0.2, "usd_per_1k_chars": 0.03},
            {"name": "b", "verdict": "pass", "total_usd": 0.2, "usd_per_1k_chars": 0.02}]
    assert cheapest_passing(rows) == "b"


@pytest.mark.slow
def test_variants_write_comparison_files(tmp_path: Path) -> None:
    variants = [("static-3", _variant(tmp_path / "static-3", 3, _summary("pass", 0.30, 0.03))),
                ("reactive", _variant(tmp_path / "reactive", 1, _summary("fail", 0.10, 0.01, p99_met=False))),
                ("predictive", _variant(tmp_path / "predictive", 2, _summary("pass", 0.20, 0.02)))]
    comparison = write_comparison(tmp_path, variants)
    saved = json.loads((tmp_path / "comparison.json").read_text())
    assert saved["cheapest_passing"] == "predictive" == comparison["cheapest_passing"]
    assert saved["passed"] == ["static-3", "predictive"]
    assert [row["name"] for row in saved["variants"]] == ["static-3", "reactive", "predictive"]
    assert saved["pools"] == ["fast", "quality"] and saved["fault_names"] == ["gpu-node-loss"]
    markdown = (tmp_path / "comparison.md").read_text()
    assert "| predictive (cheapest passing) | pass |" in markdown
    assert "MISSED (100.0 ms)" in markdown and "$0.3" in markdown
    html = (tmp_path / "comparison.html").read_text()
    assert '<a href="reactive/report.html">reactive</a>' in html and "cheapest variant" in html


def test_variants_missing_results_make_an_invalid_row(tmp_path: Path) -> None:
    row = variant_row("gone", tmp_path / "gone")
    assert row["verdict"] == "invalid" and "no usable results" in row["verdict_reason"]
    assert comparison_dict(tmp_path, [row])["cheapest_passing"] is None


def test_variants_binary_summary_makes_an_invalid_row_naming_it(tmp_path: Path) -> None:
    root = _variant(tmp_path / "v1", 2, _summary("pass", 1.0, 0.1))
    (root / "summary.json").write_bytes(b"\xff\xfe\x00\xd4garbage")
    row = variant_row("v1", root)
    assert row["verdict"] == "invalid" and "summary.json" in row["verdict_reason"]
    assert "is not UTF-8 text" in row["verdict_reason"]


def test_variants_comparison_json_is_the_plain_dump_byte_for_byte(tmp_path: Path) -> None:
    variants = [("static-3", _variant(tmp_path / "static-3", 3, _summary("pass", 0.30, float("nan")))),
                ("gone", tmp_path / "gone")]
    write_comparison(tmp_path, variants)
    plain = _json_safe(comparison_dict(tmp_path, [variant_row(name, root) for name, root in variants]))
    assert (tmp_path / "comparison.json").read_text() == json.dumps(plain, indent=2) + "\n"
    document = read_comparison(tmp_path / "comparison.json")
    assert document.variants[0].p99_peak_ms == 500.0 and document.variants[0].usd_per_1k_chars is None
    assert document.variants[1].verdict == "invalid" and document.variants[1].p99_peak_ms is None
    assert document.as_dict() == plain
    assert "| gone | invalid |" in (tmp_path / "comparison.md").read_text()


def test_variants_malformed_comparison_is_refused_naming_the_field(tmp_path: Path) -> None:
    write_comparison(tmp_path, [("gone", tmp_path / "gone")])
    saved = json.loads((tmp_path / "comparison.json").read_text())
    saved["variants"][0]["verdict"] = "maybe"
    (tmp_path / "comparison.json").write_text(json.dumps(saved))
    with pytest.raises(ResultsError, match=r"comparison\.json.*variants\.0\.verdict"):
        read_comparison(tmp_path / "comparison.json")
    with pytest.raises(ValidationError, match="node_hours"):
        ComparisonDocument.model_validate(comparison_dict(tmp_path, [variant_row("gone", tmp_path / "gone")
                                                                     | {"node_hours": {"fast": "many"}}]))
