"""capacity.html: the knee curve of every condition, the capacity point and the steps, from plain data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rushhour.reports.capacity.page import knee_chart, render_capacity_html, write_capacity_html


def _step(index: int, rate: float, passed: bool, p99: float | None) -> dict[str, Any]:
    latency = {key: {"value": value, "ci_low": value * 0.9 if value else None, "ci_high": None, "samples": 400}
               for key, value in (("p50", 90.0), ("p95", 200.0), ("p99", p99))}
    return {"index": index, "offered_rps": rate, "achieved_rps": rate * (1.0 if passed else 0.8),
            "latency_ms": latency, "error_rate": 0.0 if passed else 0.1, "shed_rate": 0.0 if passed else 0.05,
            "passed": passed, "verdict": "pass" if passed else "fail", "early": not passed,
            "limiting": None if passed else "p99", "reason": "why", "measured_s": 12.0}


def _document() -> dict[str, Any]:
    healthy = {"condition": "none", "capacity_rps": 32.0, "summary": "32.0 req/s (fails at 34.0, limited by p99)",
               "generator_bound": False, "below_min": False, "meets_requirement": None,
               "at_capacity": {"pools": {"quality": {"nodes_alive": 2.0, "utilisation": 0.81, "queue_depth": 1.5}},
                               "cost": {"known": True, "usd_per_1k_chars": 0.00123}, "step": 2},
               "steps": [_step(1, 16.0, True, 150.0), _step(2, 32.0, True, 420.0), _step(3, 34.0, False, None)]}
    degraded = {"condition": "n-1", "capacity_rps": None, "summary": "< 16.0 req/s: even the lowest rate tried failed",
                "generator_bound": False, "below_min": True, "meets_requirement": False, "at_capacity": None,
                "steps": [_step(1, 16.0, False, 900.0)]}
    return {"scenario": "mdc", "target": "http://127.0.0.1:1", "aborted": None,
            "slos": [{"name": "p99", "objective": "P99 <= 500 ms", "kind": "latency", "threshold_ms": 500.0}],
            "settings": {"step_duration_s": 20.0, "warmup_s": 3.0, "precision": 0.05, "seed": 3},
            "wall_s": 100.0, "environment": {"cpu_cores": 2}, "conditions": [healthy, degraded]}


@pytest.mark.slow
def test_capacity_report_shows_every_condition_its_capacity_point_and_steps(tmp_path: Path) -> None:
    path = write_capacity_html(_document(), tmp_path / "capacity.html")
    html = path.read_text()
    assert html.count("data:image/png;base64,") == 1
    assert "none: 32.0 req/s (fails at 34.0, limited by p99)" in html
    assert "n-1: &lt; 16.0 req/s" in html and 'class="banner below"' in html
    assert "utilisation 81.0%" in html and "$0.00123 per 1k characters" in html
    assert html.count("<tr><td>") == 4  # three steps of none, one of n-1


def test_capacity_report_without_steps_says_there_is_no_curve() -> None:
    document = _document() | {"conditions": [], "aborted": "interrupted by the operator (Ctrl-C)"}
    html = render_capacity_html(document)
    assert "No step ran" in html and "Aborted: interrupted" in html


@pytest.mark.slow
def test_capacity_knee_chart_draws_missing_percentiles_without_failing() -> None:
    chart = knee_chart(_document())
    assert chart.png_base64 and chart.key == "knee"


def test_capacity_report_states_the_confidence_each_step_was_judged_at() -> None:
    """A plain search (no met_error recorded, or 5%) at 95% a step; a calibration's at 77.6% a
    step, with the 5% its two confirming steps share."""
    plain = render_capacity_html(_document() | {"conditions": []})
    assert "met with 95.0% confidence" in plain and "wrong at most" not in plain
    document = _document() | {"conditions": []}
    document["settings"] = document["settings"] | {"met_error": 0.05 ** 0.5}
    calibration = render_capacity_html(document)
    assert "met with 77.6% confidence" in calibration
    assert "each spend 22.4% on a wrong" in calibration and "wrong at most 5.0% of the time" in calibration
