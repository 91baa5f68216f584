"""A capacity step's SLO verdicts at 95% confidence, with requests still in flight."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reports.schema import SloSpec
from reports.stepstats import judge_slos, samples_to_pass, step_figures

P99 = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=500)
AVAILABILITY = SloSpec(name="avail", kind="availability", objective=0.95)
DEGRADED = SloSpec(name="degraded", kind="degraded", max_share=0.2)


def _frame(n: int, *, slow: int = 0, failed: int = 0, pending: int = 0, rate: float = 50.0) -> pd.DataFrame:
    """n requests at `rate`; the first `slow` take 900 ms, the next `failed` fail, the last `pending` are unanswered."""
    intended = np.arange(n) / rate
    latency = np.full(n, 100.0)
    latency[:slow] = 900.0
    ok = np.ones(n, dtype=bool)
    ok[slow:slow + failed] = False
    done = intended + latency / 1000.0
    if pending:
        done[-pending:] = np.nan
    return pd.DataFrame({
        "intended_s": intended, "sent_s": intended, "done_s": done, "latency_ms": (done - intended) * 1000.0,
        "ok": ok & ~np.isnan(done), "status": np.where(ok, 200, 503), "degraded": False,
        "priority": "paid", "mode": "auto", "kind": "short", "phase": "",
    })


def test_stepstats_samples_to_pass_is_the_zero_bad_sample_size() -> None:
    assert samples_to_pass(P99) == 299
    assert samples_to_pass(SloSpec(name="p95", kind="latency", percentile=95, threshold_ms=1)) == 59
    assert samples_to_pass(AVAILABILITY) == 59
    assert samples_to_pass(DEGRADED) == 14


def test_stepstats_p99_met_missed_or_open_by_the_evidence() -> None:
    end = 20.0
    assert judge_slos(_frame(400), [P99], end)[0].decision == "met"
    assert judge_slos(_frame(400, slow=12), [P99], end)[0].decision == "missed"
    assert judge_slos(_frame(150), [P99], end)[0].decision == "open"  # too few to show P99 met
    assert judge_slos(_frame(400, slow=4), [P99], end)[0].decision == "open"  # 1% bad: neither is clear


def test_stepstats_a_failure_is_bad_however_fast() -> None:
    call = judge_slos(_frame(400, failed=12), [P99], 20.0)[0]
    assert call.decision == "missed" and call.bad == 12


def test_stepstats_pending_requests_count_only_once_they_are_over_the_threshold() -> None:
    frame = _frame(400, pending=5)
    final_now = float(frame["intended_s"].max()) + 0.2  # the unanswered have waited less than 500 ms
    call = judge_slos(frame, [P99], final_now)[0]
    assert call.pending == 5 and call.decision == "open"  # pessimistically bad: a pass is not shown
    later = judge_slos(frame, [P99], final_now + 1.0)[0]
    assert later.pending == 0 and later.bad == 5


def test_stepstats_mid_step_only_the_settled_part_is_judged() -> None:
    frame = _frame(400, pending=20)
    now = float(frame["intended_s"].max())
    call = judge_slos(frame, [P99], now, final=False, record_lag_s=1.0)[0]
    assert call.pending == 0 and call.samples < 400 - 20


def test_stepstats_availability_and_degraded_shares() -> None:
    assert judge_slos(_frame(300), [AVAILABILITY], 10.0)[0].decision == "met"
    assert judge_slos(_frame(300, failed=40), [AVAILABILITY], 10.0)[0].decision == "missed"
    frame = _frame(300)
    frame.loc[:99, "degraded"] = True
    assert judge_slos(frame, [DEGRADED], 10.0)[0].decision == "missed"


def test_stepstats_phase_filters_are_ignored_at_a_constant_rate() -> None:
    scoped = SloSpec(name="p99-peak", kind="latency", percentile=99, threshold_ms=500, phase="peak")
    assert judge_slos(_frame(400), [scoped], 20.0)[0].samples == 400


def test_stepstats_figures_rates_percentiles_and_shares() -> None:
    frame = _frame(500, failed=25)
    done = frame["done_s"].to_numpy()
    figures = step_figures(frame, window=(0.0, 10.0), completions=done[frame["ok"].to_numpy()])
    assert figures["offered_rps"] == pytest.approx(50.0)
    assert figures["achieved_rps"] == pytest.approx(47.5, abs=0.5)
    assert figures["error_rate"] == pytest.approx(0.05) and figures["shed_rate"] == pytest.approx(0.05)
    assert figures["latency_ms"]["p50"]["value"] == pytest.approx(100.0)


TTFT = SloSpec(name="ttft", kind="ttft", percentile=99, threshold_ms=300)


def _streamed(n: int, *, slow_first: int = 0, pending: int = 0) -> pd.DataFrame:
    """n streamed answers: first token after 200 ms (the first `slow_first` after 800 ms), 1 s in all."""
    frame = _frame(n, pending=pending)
    frame["done_s"] = np.where(frame["done_s"].isna(), np.nan, frame["intended_s"] + 1.0)
    frame["latency_ms"] = (frame["done_s"] - frame["intended_s"]) * 1000.0
    ttft = np.full(n, 200.0)
    ttft[:slow_first] = 800.0
    frame["ttft_ms"] = np.where(frame["done_s"].isna(), np.nan, ttft)
    return frame


def test_stepstats_judges_ttft_over_its_own_column() -> None:
    assert judge_slos(_streamed(400), [TTFT], 20.0)[0].decision == "met"  # 1 s end-to-end, 200 ms TTFT
    missed = judge_slos(_streamed(400, slow_first=40), [TTFT], 20.0)[0]
    assert missed.decision == "missed" and missed.bad == 40


def test_stepstats_a_stream_in_flight_past_the_threshold_is_pending_not_bad() -> None:
    frame = _streamed(400, pending=30)
    now = float(frame["intended_s"].max()) + 5.0  # the unanswered ones have waited seconds
    ttft = judge_slos(frame, [TTFT], now)[0]
    latency = judge_slos(frame, [P99], now)[0]
    assert ttft.pending == 30 and ttft.bad == 0  # their first token may well have come in time
    assert latency.pending == 0 and latency.bad >= 30  # end to end they are already too slow


def test_stepstats_goodput_counts_requests_meeting_every_per_request_objective() -> None:
    frame = _streamed(500, slow_first=50)
    done = frame["done_s"].to_numpy()
    figures = step_figures(frame, window=(0.0, 10.0), completions=done, specs=[TTFT])
    assert figures["goodput_rps"] == pytest.approx(45.0)  # 450 good in 10 s
    assert figures["ttft_ms"]["p50"]["value"] == pytest.approx(200.0)
    assert "ttft_ms" not in step_figures(_frame(100), window=(0.0, 2.0), completions=np.empty(0))
