"""One step as data: the constant-rate schedule, what is known mid-step, and the early-stopping rules."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from rushhour.reports.estimate.sequential import paired_error
from rushhour.reports.schema import SloSpec
from rushhour.scenarios.capacity.steps import StepRules, assess, curtailed, live_frame, look_times, step_schedule
from rushhour.traffic_models import load_traffic_model

P99 = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=500)
RULES = StepRules(measure_s=20.0, warmup_s=2.0, max_lag_p99_ms=50.0)


def _requests(rate: float, end_s: float, *, latency_ms: float = 100.0, slow_share: float = 0.0,
              lag_ms: float = 1.0, served_share: float = 1.0) -> pd.DataFrame:
    """Requests at `rate` up to `end_s`, all answered; a share slow (900 ms) and a share never served."""
    intended = np.arange(0.0, end_s, 1.0 / rate)
    n = intended.size
    rng = np.random.default_rng(1)
    latency = np.where(rng.random(n) < slow_share, 900.0, latency_ms)
    sent = intended + lag_ms / 1000.0
    done = sent + latency / 1000.0
    ok = rng.random(n) < served_share
    return pd.DataFrame({
        "intended_s": intended, "sent_s": sent, "done_s": done, "latency_ms": (done - intended) * 1000.0,
        "ok": ok, "status": np.where(ok, 200, 503), "degraded": False, "priority": "paid", "mode": "auto",
        "kind": "short", "phase": "", "pool_wait_ms": 0.1, "fired": 1,
    })


def test_steps_schedule_offers_exactly_the_rate_in_the_scenarios_mix() -> None:
    model = load_traffic_model("promo-day")
    schedule = step_schedule(model, rate_rps=40.0, duration_s=25.0, seed=3)
    offsets = schedule["offset_s"].to_numpy()
    assert len(schedule) == 1000 and (np.diff(offsets) >= 0).all() and 0 <= offsets.min() and offsets.max() < 25
    assert set(schedule["kind"]) == {"short", "document"} and set(schedule["priority"]) == {"paid", "free", "batch"}
    again = step_schedule(model, rate_rps=40.0, duration_s=25.0, seed=4)
    assert not np.array_equal(offsets, again["offset_s"].to_numpy())


def test_steps_live_frame_marks_unanswered_rows_and_ends_recorded_failures_now() -> None:
    schedule = pd.DataFrame({"offset_s": [0.0, 1.0, 2.0, 9.0], "kind": "short", "chars": 10, "priority": "paid",
                             "mode": "auto", "text_id": 1, "tenant": "t", "phase": "", "deadline_ms": 2000})
    parts = pd.DataFrame({"row": [0, 1], "intended_s": [0.0, 1.0], "sent_s": [0.0, 1.0], "done_s": [0.1, np.nan],
                          "pool_wait_ms": 0.0, "status": [200, 0], "error": ["", "timeout"], "model": "",
                          "cached": False, "degraded": False, "node": "", "first_segment_s": np.nan,
                          "via": "translate"})
    frame = live_frame(schedule, parts, 5.0)
    assert len(frame) == 3  # the row due at 9 s is not due yet
    assert frame["done_s"].tolist()[:2] == [0.1, 5.0] and bool(frame["done_s"].isna().iat[2])
    assert not frame["ok"].iat[1]


def test_steps_a_clear_failure_stops_the_step_at_the_first_look() -> None:
    frame = _requests(40.0, 8.0, slow_share=0.2)
    verdict = assess(frame, [P99], RULES, 8.0, look=1)
    assert verdict.decision == "fail" and verdict.limiting == "p99"


def test_steps_a_look_judges_only_its_share_of_the_window() -> None:
    frame = _requests(100.0, 22.0)
    first = assess(frame, [P99], RULES, 22.0, look=1)
    assert first.calls[0].samples == pytest.approx(100.0 * RULES.measure_s / RULES.looks, abs=2)
    assert first.decision == "continue"  # 500 requests, none bad: not enough at the first look's level
    later = assess(frame, [P99], RULES, 22.0, look=3)
    assert later.decision == "pass", later.reason


def test_steps_interim_looks_wait_for_answers_within_the_threshold() -> None:
    times = look_times(RULES, [P99])
    assert len(times) == RULES.looks - 1
    assert times[0] == pytest.approx(RULES.look_end(1) + 0.5 + RULES.record_lag_s)


def test_steps_too_few_requests_end_open_and_count_as_a_failure() -> None:
    verdict = assess(_requests(5.0, 24.0), [P99], RULES, 24.0, look=RULES.looks)
    assert verdict.decision == "fail" and "not shown met" in verdict.reason


def test_steps_a_service_that_falls_behind_fails_on_throughput() -> None:
    frame = _requests(100.0, 22.0)
    late = frame["intended_s"].to_numpy() > 11.0
    frame.loc[late, "done_s"] = 23.0  # half the window answered only after it: the service fell behind
    frame["latency_ms"] = (frame["done_s"] - frame["intended_s"]) * 1000.0
    verdict = assess(frame, [], RULES, 23.5, look=RULES.looks)
    assert verdict.decision == "fail" and verdict.limiting == "throughput"


def test_steps_a_lagging_generator_makes_the_step_invalid() -> None:
    verdict = assess(_requests(50.0, 22.0, lag_ms=120.0), [P99], RULES, 22.5, look=RULES.looks)
    assert verdict.decision == "invalid" and "schedule lag" in verdict.reason and not verdict.generator_valid


def test_steps_a_service_failing_even_from_the_actual_send_is_a_failure_not_invalid() -> None:
    frame = _requests(50.0, 22.0, lag_ms=120.0, slow_share=0.3)
    verdict = assess(frame, [P99], RULES, 22.5, look=RULES.looks)
    assert verdict.decision == "fail" and "actual send" in verdict.reason


@pytest.mark.parametrize("cpu, expected", [(0.5, "pass"), (0.97, "invalid")])
def test_steps_generator_cpu_saturation_is_invalid(cpu: float, expected: str) -> None:
    verdict = assess(_requests(50.0, 22.0), [P99], RULES, 22.5, look=RULES.looks, cpu_max=cpu)
    assert verdict.decision == expected


def _schedule(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns={"intended_s": "offset_s"})[["offset_s", "kind", "priority", "mode"]]


def _bad_at(frame: pd.DataFrame, times: list[float]) -> pd.DataFrame:
    """`frame` with the requests intended nearest `times` answered after 900 ms."""
    out = frame.copy()
    intended, sent, done = (out[c].to_numpy(dtype=float).copy() for c in ("intended_s", "sent_s", "done_s"))
    for t in times:
        row = int(np.argmin(np.abs(intended - t)))
        done[row] = sent[row] + 0.9
    out["done_s"] = done
    out["latency_ms"] = (out["done_s"] - out["intended_s"]) * 1000.0
    return out


def test_steps_a_step_whose_final_look_can_no_longer_pass_fails_at_once() -> None:
    """600 requests in the window: at the final look a P99 survives one bad request, not two."""
    full = _requests(30.0, RULES.schedule_s)
    schedule = _schedule(full)
    now = 6.0

    def so_far(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["intended_s"] < now].reset_index(drop=True)

    assert curtailed(so_far(_bad_at(full, [3.0])), schedule, [P99], RULES, now) is None
    verdict = curtailed(so_far(_bad_at(full, [3.0, 5.0])), schedule, [P99], RULES, now)
    assert verdict is not None and verdict.decision == "fail" and verdict.limiting == "p99"
    assert verdict.now_s == now and "2 of" in verdict.reason and "still due" in verdict.reason
    # the final look agrees: two bad requests fail the step, one passes it
    assert assess(_bad_at(full, [3.0, 5.0]), [P99], RULES, RULES.schedule_s + 1.0, look=RULES.looks).decision == "fail"
    assert assess(_bad_at(full, [3.0]), [P99], RULES, RULES.schedule_s + 1.0, look=RULES.looks).decision == "pass"


def test_steps_curtailing_never_ends_a_step_the_final_look_would_pass() -> None:
    """Wherever the bad requests fall and whenever it is asked, a curtailed step is one whose
    final look, with every later request good, does not pass."""
    full = _requests(30.0, RULES.schedule_s)
    schedule = _schedule(full)
    rng = np.random.default_rng(7)
    curtailed_steps = 0
    for _ in range(60):
        bad_times = sorted(rng.uniform(RULES.warmup_s, 10.0, int(rng.integers(0, 5))).tolist())
        now = float(rng.uniform(RULES.warmup_s + 0.5, 12.0))
        frame = _bad_at(full, [t for t in bad_times if t < now - 1.0])
        verdict = curtailed(frame[frame["intended_s"] < now].reset_index(drop=True), schedule, [P99], RULES, now)
        if verdict is not None:
            curtailed_steps += 1
            assert assess(frame, [P99], RULES, RULES.schedule_s + 1.0, look=RULES.looks).decision != "pass"
    assert curtailed_steps >= 10


def test_steps_too_few_requests_for_any_pass_are_curtailed_with_the_reason() -> None:
    full = _requests(5.0, RULES.schedule_s)  # 100 requests: a P99 needs more even with none bad
    verdict = curtailed(full[full["intended_s"] < 4.0].reset_index(drop=True), _schedule(full), [P99], RULES, 4.0)
    assert verdict is not None and "too few" in verdict.reason


def _lagging(frame: pd.DataFrame, rows: np.ndarray, lag_ms: float = 120.0) -> pd.DataFrame:
    """`frame` with the requests at positions `rows` sent `lag_ms` late (and answered as late)."""
    out = frame.copy()
    shift = np.zeros(len(out))
    shift[rows] = lag_ms / 1000.0
    out["sent_s"] = out["sent_s"] + shift
    out["done_s"] = out["done_s"] + shift
    out["latency_ms"] = (out["done_s"] - out["intended_s"]) * 1000.0
    return out


def test_steps_curtailing_waits_out_the_warm_up_and_a_doubtful_generator() -> None:
    full = _bad_at(_requests(30.0, RULES.schedule_s), [0.5, 1.0, 1.5])
    assert curtailed(full[full["intended_s"] < 1.9], _schedule(full), [P99], RULES, 1.9) is None  # warm-up
    # five late requests of the 120 so far put the lag P99 past 50 ms now, but not among the 600
    # of the whole window if the rest are sent on time: only the final look can tell
    base = _requests(30.0, RULES.schedule_s)
    late = np.flatnonzero(base["intended_s"].to_numpy() >= RULES.warmup_s)[:5]
    lagging = _bad_at(_lagging(base, late), [3.0, 4.0, 5.0])
    assert assess(lagging[lagging["intended_s"] < 6.0], [P99], RULES, 6.0, look=RULES.looks).decision == "invalid"
    assert curtailed(lagging[lagging["intended_s"] < 6.0], _schedule(lagging), [P99], RULES, 6.0) is None
    final = assess(lagging, [P99], RULES, RULES.schedule_s + 1.0, look=RULES.looks)
    assert final.generator_valid and final.figures["lag_p99_ms"] == pytest.approx(1.0)


def test_steps_a_generator_that_can_no_longer_be_valid_ends_the_step_invalid_at_once() -> None:
    """Every request so far 120 ms late: 120 of the window's 600 already, so its lag P99 stays
    past 50 ms even if every later one leaves on time. The step ends at the first ask after
    the warm-up, and the final look agrees."""
    full = _requests(30.0, RULES.schedule_s, lag_ms=120.0)
    verdict = curtailed(full[full["intended_s"] < 6.0].reset_index(drop=True), _schedule(full), [P99], RULES, 6.0)
    assert verdict is not None and verdict.decision == "invalid" and verdict.limiting == "generator"
    assert not verdict.generator_valid and verdict.now_s == 6.0
    assert "cannot keep up" in verdict.reason and "schedule lag P99 120.0 ms" in verdict.reason
    assert assess(full, [P99], RULES, RULES.schedule_s + 1.0, look=RULES.looks).decision == "invalid"


def test_steps_a_generator_ended_at_once_is_still_a_failure_when_the_service_missed_from_the_send() -> None:
    full = _requests(30.0, RULES.schedule_s, lag_ms=120.0, slow_share=0.3)
    verdict = curtailed(full[full["intended_s"] < 6.0].reset_index(drop=True), _schedule(full), [P99], RULES, 6.0)
    assert verdict is not None and verdict.decision == "fail" and "actual send" in verdict.reason


def test_steps_a_saturated_generator_cpu_ends_the_step_invalid_at_once() -> None:
    full = _requests(30.0, RULES.schedule_s)
    so_far = full[full["intended_s"] < 4.0].reset_index(drop=True)
    assert curtailed(so_far, _schedule(full), [P99], RULES, 4.0, cpu_max=0.5) is None
    verdict = curtailed(so_far, _schedule(full), [P99], RULES, 4.0, cpu_max=0.97)
    assert verdict is not None and verdict.decision == "invalid" and "CPU peaked at 97%" in verdict.reason


def test_steps_a_step_is_ended_for_its_generator_exactly_when_its_final_look_would_find_it_invalid() -> None:
    """Wherever the late requests fall and whenever it is asked: with every later request sent on
    time (the best the rest of the step can do), a step is ended invalid when, and only when, its
    final look finds the generator invalid too."""
    full = _requests(30.0, RULES.schedule_s)
    schedule = _schedule(full)
    intended = full["intended_s"].to_numpy()
    rng = np.random.default_rng(11)
    ended = kept = 0
    for _ in range(80):
        now = float(rng.uniform(RULES.warmup_s + 0.5, RULES.schedule_s))
        so_far = np.flatnonzero((intended >= RULES.warmup_s) & (intended < now - 0.2))
        rows = rng.choice(so_far, size=min(len(so_far), int(rng.integers(0, 12))), replace=False)
        frame = _lagging(full, rows, float(rng.uniform(60.0, 350.0)))  # late, yet within 500 ms
        verdict = curtailed(frame[frame["intended_s"] < now].reset_index(drop=True), schedule, [P99], RULES, now)
        final = assess(frame, [P99], RULES, RULES.schedule_s + 1.0, look=RULES.looks)
        if verdict is not None:
            ended += 1
            assert verdict.decision == "invalid" and final.decision == "invalid"
        else:
            kept += 1
            assert final.generator_valid and final.decision != "invalid"
    assert ended >= 10 and kept >= 10


def test_steps_a_calibration_window_passes_on_fewer_requests_and_says_at_what_confidence() -> None:
    """10 req/s for 20 s: 200 good requests are too few for a P99 at 95% (314), enough for a
    window whose "met" spends sqrt(5%) (175); each verdict states its own confidence."""
    frame = _requests(10.0, 30.0)
    plain = assess(frame, [P99], RULES, 30.0, look=RULES.looks)
    assert plain.decision == "fail" and "not shown met with 95% confidence" in plain.reason
    paired = dataclasses.replace(RULES, met_error=paired_error())
    verdict = assess(frame, [P99], paired, 30.0, look=paired.looks)
    assert verdict.decision == "pass" and "every SLO met with 77.6% confidence" in verdict.reason
