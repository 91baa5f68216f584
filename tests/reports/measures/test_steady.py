"""MSER-5 finds a known warm-up, and steady_only SLOs are judged over the steady window."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rushhour.reports.measures.slos import evaluate_slos
from rushhour.reports.measures.steady import SteadyWindow, mser5, per_second, steady_mask, steady_windows
from rushhour.reports.measures.steady_slos import judge_steady
from rushhour.reports.schema import SloSpec
from tests.reports.helpers import requests_frame


def _warmup_series(warmup_s: int, steady_s: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    decay = 400.0 * np.exp(-np.arange(warmup_s) / (warmup_s / 4.0)) + 100.0
    return np.concatenate([decay, 100.0 + rng.normal(0.0, 3.0, steady_s)])


@pytest.mark.parametrize("warmup_s", [10, 20, 30])
def test_mser5_cuts_a_known_warmup_and_no_more(warmup_s: int) -> None:
    cut = mser5(_warmup_series(warmup_s, 90))
    assert cut is not None and cut % 5 == 0
    assert warmup_s - 5 <= cut <= warmup_s + 10


def test_mser5_keeps_a_series_that_starts_steady() -> None:
    rng = np.random.default_rng(1)
    assert mser5(100.0 + rng.normal(0.0, 3.0, 60)) in (0, 5)


def test_mser5_claims_no_steady_state_for_a_climbing_series_or_a_short_one() -> None:
    assert mser5(np.arange(60, dtype=float) ** 2) is None
    assert mser5(np.full(19, 100.0)) is None


def test_per_second_means_latency_by_intended_second() -> None:
    frame = requests_frame([0.1, 0.6, 1.2, 3.5], [100.0, 300.0, 50.0, 80.0])
    assert per_second(frame, 0.0, 4.0).tolist() == [200.0, 50.0, 50.0, 80.0]


def _warm_run() -> tuple[pd.DataFrame, list[SteadyWindow], np.ndarray]:
    """100 s at 10 req/s: the first 20 s answer in 900 ms, then 100 ms (threshold 500 ms)."""
    intended = np.arange(0.0, 100.0, 0.1)
    latency = np.where(intended < 20.0, 900.0, 100.0)
    frame = requests_frame(intended, latency)
    windows = steady_windows(frame, [], (0.0, 100.0))
    return frame, windows, intended


def test_steady_window_starts_after_the_warmup() -> None:
    _, [window], _ = _warm_run()
    assert window.steady_start_s == pytest.approx(20.0)
    assert window.warmup_s == pytest.approx(20.0) and window.end_s == 100.0


def test_steady_only_slo_is_judged_over_the_steady_window_with_the_whole_run_beside() -> None:
    frame, windows, intended = _warm_run()
    spec = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=500, steady_only=True)
    plain = SloSpec(name="p99-all", kind="latency", percentile=99, threshold_ms=500)
    judged = evaluate_slos(frame, frame["phase"], [], [spec, plain], 100.0, 1.0)
    steady, whole = judge_steady(judged, [spec, plain], frame, frame["phase"], steady_mask(intended, windows))
    assert steady["met"] is True and steady["samples"] == 800 and steady["bad"] == 0
    assert steady["judged_over"] == "steady windows"
    assert steady["whole_run"]["met"] is False and steady["whole_run"]["bad"] == 200
    assert whole["met"] is False and whole["samples"] == 1000
    assert "steady state" in spec.objective_text


def test_steady_only_without_a_steady_window_judges_the_whole_run_and_says_so() -> None:
    frame = requests_frame(np.arange(0.0, 10.0, 0.5), np.full(20, 100.0))
    spec = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=500, steady_only=True)
    mask = steady_mask(frame["intended_s"].to_numpy(), steady_windows(frame, [], (0, 10)))
    [result] = judge_steady(evaluate_slos(frame, frame["phase"], [], [spec], 10.0, 1.0), [spec], frame,
                            frame["phase"], mask)
    assert result["judged_over"] == "whole run" and result["samples"] == 20
    assert "no steady window" in result["steady_note"]


def test_steady_windows_are_found_per_phase() -> None:
    intended = np.arange(0.0, 120.0, 0.2)
    latency = np.where((intended % 60.0) < 15.0, 800.0, 100.0)
    frame = requests_frame(intended, latency)
    events = [{"name": "base", "start_s": 0.0, "end_s": 60.0}, {"name": "peak", "start_s": 60.0, "end_s": 120.0}]
    base, peak = steady_windows(frame, events, (0.0, 120.0))
    assert (base.phase, base.steady_start_s) == ("base", 15.0)
    assert (peak.phase, peak.steady_start_s) == ("peak", 75.0)


def test_goodput_cannot_be_steady_only() -> None:
    with pytest.raises(ValueError, match="steady_only is for per-request objectives"):
        SloSpec(name="g", kind="goodput", min_rps=1, steady_only=True)
