"""The soak section and the drift SLO on synthetic series whose true slope is known."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from rushhour.reports import build_reports
from rushhour.reports.measures.drift import HOUR_S, drift_slo, soak_section, trend, window_width
from rushhour.reports.schema import SloSpec
from tests.reports.helpers import requests_frame, write_run

RNG_SEED = 7


def _series(slope_per_h: float, *, hours: float = 6.0, noise: float = 2.0, n: int = 48) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(RNG_SEED)
    t = np.linspace(0.0, hours * HOUR_S, n)
    return t, 100.0 + slope_per_h * t / HOUR_S + rng.normal(0.0, noise, n)


def test_trend_recovers_a_known_slope_inside_its_interval() -> None:
    t, y = _series(5.0)
    line = trend(t, y)
    assert line["trusted"]
    low, high = line["ci"]
    assert low < 5.0 < high
    assert abs(line["slope_per_h"] - 5.0) < 1.0


def test_trend_of_a_flat_series_has_an_interval_around_zero() -> None:
    t, y = _series(0.0)
    low, high = trend(t, y)["ci"]
    assert low < 0.0 < high


def test_trend_is_not_trusted_with_too_few_points() -> None:
    assert trend(np.array([0.0, 1.0]), np.array([1.0, 2.0]))["trusted"] is False


def _drift(metric: str, max_slope: float) -> SloSpec:
    return SloSpec(name=f"{metric}-drift", kind="drift", metric=metric, max_slope=max_slope)


def _soak_of(t: np.ndarray, y: np.ndarray, metric: str = "latency_p99") -> dict:
    line = trend(t, y) | {"unit": "ms/h"}
    return {"trends": {metric: line}}


def test_drift_slo_fails_a_climbing_series_and_passes_a_flat_one() -> None:
    spec = _drift("latency_p99", 1.0)
    assert drift_slo(spec, _soak_of(*_series(5.0)))["met"] is False
    assert drift_slo(spec, _soak_of(*_series(0.0)))["met"] is True


def test_drift_slo_passes_a_slope_not_significantly_above_the_allowed_one() -> None:
    # the true slope equals the allowance: the interval straddles it, so the SLO holds
    assert drift_slo(_drift("latency_p99", 5.0), _soak_of(*_series(5.0)))["met"] is True


def test_drift_slo_without_enough_windows_is_untrusted_and_not_met() -> None:
    row = drift_slo(_drift("latency_p99", 1.0), _soak_of(np.array([0.0, 1.0]), np.array([1.0, 1.0])))
    assert row["trusted"] is False and row["met"] is False and "a trend needs 3" in row["drift_note"]


def test_drift_kind_needs_its_metric_and_allowance() -> None:
    with pytest.raises(ValidationError, match="needs metric, max_slope"):
        SloSpec(name="d", kind="drift")
    with pytest.raises(ValidationError):
        SloSpec(name="d", kind="drift", metric="cpu", max_slope=1.0)


def test_window_width_is_an_hour_for_long_runs_and_a_twelfth_for_short_ones() -> None:
    assert window_width(24 * HOUR_S) == HOUR_S
    assert window_width(120.0) == pytest.approx(10.0)


def _climbing_requests(duration_s: float, ms_per_s: float) -> pd.DataFrame:
    intended = np.arange(0.0, duration_s, 0.05)
    return requests_frame(intended, 50.0 + ms_per_s * intended)


def test_soak_section_windows_latency_and_memory_of_a_known_run() -> None:
    requests = _climbing_requests(120.0, 0.5)  # P99 climbs 0.5 ms per second: 1800 ms/h
    memory = pd.DataFrame({"t_s": np.arange(0.0, 120.0), "metric": "process_resident_memory_bytes",
                           "labels": "{}", "value": 1e8 + 1e5 * np.arange(0.0, 120.0)})  # 0.1 MB/s: 360 MB/h
    soak = soak_section(requests, memory, 120.0)
    assert len(soak["windows"]) == 12
    assert soak["trends"]["latency_p99"]["slope_per_h"] == pytest.approx(1800.0, rel=0.01)
    assert soak["trends"]["server_memory"]["slope_per_h"] == pytest.approx(360.0, rel=0.01)
    assert soak["trends"]["error_rate"]["slope_per_h"] == pytest.approx(0.0, abs=1e-9)


def test_a_drifting_run_fails_its_drift_slo_in_the_report(tmp_path) -> None:
    slos = {"slos": [{"name": "p99-drift", "kind": "drift", "metric": "latency_p99", "max_slope": 100.0},
                     {"name": "mem-drift", "kind": "drift", "metric": "server_memory", "max_slope": 10.0}]}
    root = write_run(tmp_path / "run", _climbing_requests(120.0, 0.5), scenario=slos)
    summary = build_reports(root)
    rows = {row["name"]: row for row in summary["slos"]}
    assert rows["p99-drift"]["met"] is False and rows["p99-drift"]["measured"] == pytest.approx(1800.0, rel=0.01)
    assert rows["mem-drift"]["trusted"] is False  # the run has no memory series
    assert summary["verdict"] == "fail"
    written = json.loads((root / "summary.json").read_text())
    assert len(written["soak"]["windows"]) == 12
    html = (root / "report.html").read_text()
    assert "Soak: trends" in html and "ms/h" in html
    assert "latency_p99" in (root / "report.md").read_text()


def test_a_short_run_without_a_drift_slo_keeps_the_soak_section_out_of_the_report(tmp_path) -> None:
    root = write_run(tmp_path / "run", _climbing_requests(120.0, 0.5))
    summary = build_reports(root)
    assert summary["soak"]["shown"] is False and len(summary["soak"]["windows"]) == 12
    assert "Soak: trends" not in (root / "report.html").read_text()


def test_trend_is_scipy_stats_linregress_with_its_interval_widened_for_correlation() -> None:
    from scipy import stats

    from rushhour.reports.estimate.trend import charged_lag1

    rng = np.random.default_rng(8)
    for _ in range(200):
        n = int(rng.integers(3, 120))
        t_s = np.sort(rng.random(n)) * 8 * HOUR_S
        values = rng.normal(size=n) + rng.normal() * t_s / HOUR_S
        got, fit = trend(t_s, values), stats.linregress(t_s / HOUR_S, values)
        residual = values - fit.intercept - fit.slope * t_s / HOUR_S
        r = charged_lag1(residual - residual.mean())
        widen = (1 + r) / (1 - r)
        half = stats.t.ppf(0.975, max(1.0, n / widen - 2)) * fit.stderr * np.sqrt(widen)
        assert got["slope_per_h"] == pytest.approx(fit.slope, rel=1e-9, abs=1e-12)
        assert got["intercept"] == pytest.approx(fit.intercept, rel=1e-9, abs=1e-12)
        assert got["ci"] == pytest.approx([fit.slope - half, fit.slope + half], rel=1e-9, abs=1e-12)
        assert got["lag1"] == pytest.approx(r) and got["effective_points"] == pytest.approx(n / widen)
        plain = stats.t.ppf(0.975, n - 2) * fit.stderr
        assert got["ci"][0] <= fit.slope - plain + 1e-12 and got["ci"][1] >= fit.slope + plain - 1e-12
