from __future__ import annotations

import pytest

from rushhour.traffic_models import Phase, generate_schedule, load_traffic_model, phases


def assert_covers(run_phases: list[Phase], duration: float) -> None:
    assert run_phases[0].start_s == 0.0
    assert run_phases[-1].end_s == pytest.approx(duration)
    for before, after in zip(run_phases, run_phases[1:]):
        assert before.end_s == after.start_s
        assert before.name != after.name
    assert all(p.end_s > p.start_s for p in run_phases)


def test_promo_day_phases_cover_the_day_in_order() -> None:
    run_phases = phases(load_traffic_model("promo-day"))
    assert_covers(run_phases, 86_400)
    names = [p.name for p in run_phases]
    assert names[0] == "warm-up"
    assert names[-4:] == ["ramp", "peak", "recovery", "base"]
    peak = [p for p in run_phases if p.name == "peak"][-1]
    assert (peak.start_s, peak.end_s) == (19 * 3600, 22 * 3600)


def test_phases_scale_with_time_and_follow_the_window() -> None:
    model = load_traffic_model("promo-day")
    run_phases = phases(model, time_scale=60, start_clock_s=18 * 3600, duration_s=5 * 60)
    assert_covers(run_phases, 300)
    assert [p.name for p in run_phases] == ["warm-up", "base", "ramp", "peak", "recovery"]
    assert run_phases[0].end_s == pytest.approx(15.0)
    ramp = run_phases[2]
    assert (ramp.start_s, ramp.end_s) == (30.0, 60.0)


def test_flash_crowd_phases_peak_then_recover() -> None:
    run_phases = phases(load_traffic_model("flash-crowd"))
    assert [p.name for p in run_phases] == ["warm-up", "base", "peak", "recovery", "base"]
    assert run_phases[2] == Phase("peak", 1200.0, 1440.0)


def test_constant_model_is_warm_up_then_base() -> None:
    run_phases = phases(load_traffic_model("constant:5"), duration_s=200)
    assert run_phases == [Phase("warm-up", 0.0, 10.0), Phase("base", 10.0, 200.0)]


def test_schedule_phase_column_agrees_with_phases() -> None:
    model = load_traffic_model("step")
    frame = generate_schedule(model, seed=2)
    for phase in phases(model):
        inside = frame[(frame["offset_s"] >= phase.start_s) & (frame["offset_s"] < phase.end_s)]
        assert (inside["phase"] == phase.name).all()
        assert len(inside) > 0
