from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rushhour.traffic_models import TrafficModelError, generate_schedule, load_traffic_model
from rushhour.traffic_models.chunked import iter_schedule
from rushhour.traffic_models.limits import MAX_REQUESTS
from rushhour.traffic_models.schedule import intensity
from rushhour.traffic_models.window import resolve_window

REFUSED = r"rushhour draws at most 200,000,000 per run: lower the rate or the duration\."


@pytest.mark.timeout(30)
def test_generate_schedule_refuses_a_schedule_too_large_to_draw() -> None:
    with pytest.raises(TrafficModelError, match=r'about 1\.0e\+13 requests \(model "constant-1e12" for 10 s.*' + REFUSED):
        generate_schedule(load_traffic_model("constant:1e12"), seed=1, duration_s=10)


@pytest.mark.timeout(30)
def test_iter_schedule_refuses_before_drawing_a_chunk() -> None:
    chunks = iter_schedule(load_traffic_model("promo-day"), seed=1, rate_scale=1e9, time_scale=360, duration_s=60)
    with pytest.raises(TrafficModelError, match=r'about 3\.3e\+10 requests \(model "promo-day" for 60 s.*rate scale 1e\+09'):
        next(chunks)


@pytest.mark.timeout(30)
def test_sessions_count_every_turn_towards_the_limit(write_model: Callable[..., Path]) -> None:
    text = f"duration: 1000\nbase_rps: {MAX_REQUESTS / 2000}\nsessions: {{turns_min: 10, turns_max: 10}}\n"
    with pytest.raises(TrafficModelError, match=r"about 1\.0e\+09 requests"):
        generate_schedule(load_traffic_model(write_model(text)), seed=1)


@pytest.mark.timeout(30)
def test_replay_refuses_copies_too_many_to_draw(tmp_path: Path, write_model: Callable[..., Path]) -> None:
    (tmp_path / "log.csv").write_text("timestamp\n0\n1\n2\n")
    model = load_traffic_model(write_model("replay: {path: log.csv}\n"))
    with pytest.raises(TrafficModelError, match=r"about 3\.0e\+12 requests .*" + REFUSED):
        generate_schedule(model, seed=1, rate_scale=1e12)


@pytest.mark.timeout(30)
def test_resolve_window_refuses_a_duration_past_a_year() -> None:
    with pytest.raises(TrafficModelError, match=r"duration is 3\.6e\+11 s, past the 31622400 s \(366 days\)"):
        generate_schedule(load_traffic_model("constant:3"), seed=1, duration_s=99_999_999 * 3600.0)


def test_max_requests_leaves_room_for_the_24h_soak() -> None:
    model = load_traffic_model("constant:1000")
    window = resolve_window(model, time_scale=1.0, start_clock_s=0.0, duration_s=86_400.0)
    _, cumulative = intensity(model, window, 2.0)
    assert cumulative[-1] == pytest.approx(172_800_000) and cumulative[-1] < MAX_REQUESTS
