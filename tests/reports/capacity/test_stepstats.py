"""A capacity step's SLO verdicts at 95% confidence, with requests still in flight."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest

from rushhour.reports.capacity.stepstats import judge_slos, reachable, samples_to_pass, step_figures
from rushhour.reports.estimate.sequential import nominal_levels, paired_error
from rushhour.reports.schema import SloSpec

P99 = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=500)
AVAILABILITY = SloSpec(name="avail", kind="availability", objective=0.95)
DEGRADED = SloSpec(name="degraded", kind="degraded", max_share=0.2)


def _spread(n: int, count: int, offset: int = 0) -> np.ndarray:
    """`count` rows spread evenly over n (bad requests scattered, not clustered)."""
    mask = np.zeros(n, dtype=bool)
    if count:
        mask[(np.arange(count) * (n // count) + offset) % n] = True
    return mask


def _frame(n: int, *, slow: int = 0, failed: int = 0, pending: int = 0, rate: float = 50.0) -> pd.DataFrame:
    """n requests at `rate`; `slow` of them (spread) take 900 ms, `failed` (spread) fail, the last `pending`
    are unanswered."""
    intended = np.arange(n) / rate
    latency = np.where(_spread(n, slow), 900.0, 100.0)
    ok = ~_spread(n, failed, offset=1)
    done = intended + latency / 1000.0
    if pending:
        done[-pending:] = np.nan
    return pd.DataFrame({
        "intended_s": intended, "sent_s": intended, "done_s": done, "latency_ms": (done - intended) * 1000.0,
        "ok": ok & ~np.isnan(done), "status": np.where(ok, 200, 503), "degraded": False,
        "priority": "paid", "mode": "auto", "kind": "short", "phase": "",
    })


@pytest.mark.slow
def test_stepstats_samples_to_pass_is_the_zero_bad_sample_size_at_the_final_look() -> None:
    level = float(nominal_levels()[-1])
    assert 0.04 < level < 0.05  # spending leaves the final look nearly its full 5%
    assert samples_to_pass(P99) == math.ceil(math.log(level) / math.log(0.99))
    assert samples_to_pass(P99, looks=1) == 299  # one look: the plain one-sided 95% bound
    assert samples_to_pass(AVAILABILITY, looks=1) == 59 and samples_to_pass(DEGRADED, looks=1) == 14


def test_stepstats_a_paired_window_spends_more_on_met_and_the_same_on_missed() -> None:
    """With "met" at sqrt(5%) per window (a calibration's), 200 good requests show a P99 met that
    a 5% window leaves open; "missed" needs the same evidence as before, and every bound a miss
    rests on is unchanged."""
    paired = paired_error()
    assert samples_to_pass(P99, met_error=paired) == 175
    assert judge_slos(_frame(200), [P99], 20.0)[0].decision == "open"
    call = judge_slos(_frame(200), [P99], 20.0, met_error=paired)[0]
    assert call.decision == "met" and call.met_error == paired and call.met_level > call.level
    for slow in (3, 6, 9):
        strict, loose = (judge_slos(_frame(400, slow=slow), [P99], 20.0, met_error=e)[0] for e in (0.05, paired))
        assert (strict.decision == "missed") == (loose.decision == "missed") and strict.lower == loose.lower
        assert loose.upper is None or strict.upper is None or loose.upper <= strict.upper
    assert judge_slos(_frame(400, slow=12), [P99], 20.0, met_error=paired)[0].decision == "missed"
    avail = judge_slos(_frame(300, failed=40), [AVAILABILITY], 10.0, met_error=paired)[0]
    assert avail.decision == "missed"


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


def test_stepstats_an_early_look_needs_more_evidence_than_the_last() -> None:
    frame = _frame(400)
    assert judge_slos(frame, [P99], 20.0, look=1)[0].decision == "open"
    assert judge_slos(frame, [P99], 20.0, look=4)[0].decision == "met"


def test_stepstats_clustered_bad_requests_count_for_fewer_independent_ones() -> None:
    scattered = _frame(1500, slow=25)
    clustered = _frame(1500)
    clustered.loc[600:624, "latency_ms"] = 900.0  # the same 25 slow requests, in one queueing burst
    clustered["done_s"] = clustered["intended_s"] + clustered["latency_ms"] / 1000.0
    calm, burst = judge_slos(scattered, [P99], 40.0)[0], judge_slos(clustered, [P99], 40.0)[0]
    assert calm.design_effect == 1.0 and burst.design_effect > 5.0
    assert calm.decision == "missed" and burst.decision == "open"


def test_stepstats_degraded_share_counts_pending_requests_against_a_pass() -> None:
    frame = _frame(300, pending=40)
    frame["degraded"] = _spread(300, 10)  # 10 degraded of the 260 answered
    now = float(frame["intended_s"].max()) + 0.1
    loose = SloSpec(name="degraded", kind="degraded", max_share=0.12)
    call = judge_slos(frame, [loose], now)[0]
    assert call.pending == 40 and call.decision == "open"  # 50 of 300 could be degraded: not shown met
    answered = judge_slos(frame.iloc[:260], [loose], now)[0]
    assert answered.decision == "met"


def test_stepstats_availability_and_degraded_shares() -> None:
    assert judge_slos(_frame(300), [AVAILABILITY], 10.0)[0].decision == "met"
    assert judge_slos(_frame(300, failed=40), [AVAILABILITY], 10.0)[0].decision == "missed"
    frame = _frame(300)
    frame["degraded"] = _spread(300, 100)
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
    assert cast(dict[str, Any], figures["latency_ms"])["p50"]["value"] == pytest.approx(100.0)


TTFT = SloSpec(name="ttft", kind="ttft", percentile=99, threshold_ms=300)


def _streamed(n: int, *, slow_first: int = 0, pending: int = 0) -> pd.DataFrame:
    """n streamed answers: first token after 200 ms (the first `slow_first` after 800 ms), 1 s in all."""
    frame = _frame(n, pending=pending)
    frame["done_s"] = np.where(frame["done_s"].isna(), np.nan, frame["intended_s"] + 1.0)
    frame["latency_ms"] = (frame["done_s"] - frame["intended_s"]) * 1000.0
    ttft = np.full(n, 200.0)
    ttft[_spread(n, slow_first)] = 800.0
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
    assert cast(dict[str, Any], figures["ttft_ms"])["p50"]["value"] == pytest.approx(200.0)
    assert "ttft_ms" not in step_figures(_frame(100), window=(0.0, 2.0), completions=np.empty(0))


def test_stepstats_goodput_counts_hung_requests_as_not_good() -> None:
    frame = _frame(500, pending=100)  # 10 s at 50 req/s; the last 100 never answered
    done = frame["done_s"].to_numpy()
    figures = step_figures(frame, window=(0.0, 10.0), completions=done[frame["ok"].to_numpy()], specs=[P99])
    assert figures["goodput_rps"] == pytest.approx(40.0)  # 400 good in 10 s, not 50 x 400 / 400


@pytest.mark.parametrize("bad", [0, 1, 2, 3])
def test_stepstats_reachable_agrees_with_the_final_look_over_every_request_good(bad: int) -> None:
    """A P99 over 600 requests with `bad` of the first 150 slow: a pass is reachable exactly when
    the final look, with the other 450 answered fast, calls it met."""
    first = judge_slos(_frame(150, slow=bad), [P99], 100.0)[0]
    final = judge_slos(_frame(600, slow=bad), [P99], 100.0)[0]
    assert first.bad == bad
    assert reachable(first, P99.allowed_bad_share, 450) == (final.decision == "met"), (first, final)


def test_stepstats_each_call_states_its_method_and_effective_requests() -> None:
    calm = _frame(1500)
    calm_call = judge_slos(calm, [P99], 40.0)[0]
    assert calm_call.decision == "met" and calm_call.effective_samples == 1500
    assert "Clopper-Pearson" in calm_call.method and "counts as one" in calm_call.method
    slowed = _frame(1500)
    slowed.loc[np.r_[100:120, 700:720, 1300:1320], "latency_ms"] = 400.0  # three bursts near, not past, 500 ms
    slowed["done_s"] = slowed["intended_s"] + slowed["latency_ms"] / 1000.0
    call = judge_slos(slowed, [P99], 40.0)[0]
    assert call.bad == 0 and call.design_effect > 5.0
    assert call.effective_samples == int(1500 / call.design_effect) < call.needed
    assert call.decision == "open"
    assert f"{call.effective_samples:,} effective requests, at least {call.needed:,} needed" in call.method
    record = call.as_dict()
    assert record["effective_samples"] == call.effective_samples and record["method"] == call.method
