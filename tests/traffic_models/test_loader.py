from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rushhour.traffic_models import TrafficModel, TrafficModelError, load_traffic_model
from rushhour.traffic_models.events import FlashCrowd, Promotion, Step
from rushhour.traffic_models.loader import bundled_models

PROMO = """
base_rps: 2
curve: [["00:00", 3], ["08:00", 10], ["20:00", 6]]
events:
  - {type: step, at: "06:00", multiplier: 1.5, until: "07:00"}
  - {type: promotion, start: 19:00, ramp: 30m, hold: 2h, multiplier: MULT}
"""


@pytest.mark.parametrize("name", ["promo-day", "flash-crowd", "diurnal", "step"])
def test_load_traffic_model_finds_every_bundled_model(name: str) -> None:
    model = load_traffic_model(name)
    assert isinstance(model, TrafficModel)
    assert model.name == name
    assert model.duration is not None and model.duration > 0


def test_bundled_models_lists_the_shipped_files() -> None:
    assert {"promo-day", "flash-crowd", "diurnal", "step"} <= set(bundled_models())


def test_promo_day_has_an_evening_8x_promotion_and_a_flash_crowd() -> None:
    model = load_traffic_model("promo-day")
    promos = [e for e in model.events if isinstance(e, Promotion)]
    assert len(promos) == 1 and promos[0].multiplier == 8
    assert promos[0].start + promos[0].ramp <= 19 * 3600 and promos[0].start + promos[0].ramp + promos[0].hold >= 22 * 3600
    assert any(isinstance(e, FlashCrowd) for e in model.events)
    assert model.duration == 86400


def test_constant_spec_is_an_open_ended_flat_model() -> None:
    model = load_traffic_model("constant:20")
    assert model.duration is None
    assert model.rate([0.0, 5000.0]).tolist() == [20.0, 20.0]


@pytest.mark.parametrize("spec", ["constant:", "constant:-3", "constant:abc", "constant:0"])
def test_constant_spec_needs_a_positive_rate(spec: str) -> None:
    with pytest.raises(TrafficModelError, match="positive rate"):
        load_traffic_model(spec)


def test_unquoted_clock_times_are_times_not_base_60_numbers(write_model: Callable[..., Path]) -> None:
    model = load_traffic_model(write_model(PROMO.replace("MULT", "4")))
    promo = model.events[1]
    assert isinstance(promo, Promotion) and promo.start == 19 * 3600
    assert isinstance(model.events[0], Step) and model.events[0].until == 7 * 3600
    assert model.rate([8 * 3600.0])[0] == pytest.approx(20.0)


def test_invalid_field_names_file_and_field(write_model: Callable[..., Path]) -> None:
    path = write_model(PROMO.replace("MULT", "0"), name="promo.yaml")
    with pytest.raises(TrafficModelError) as info:
        load_traffic_model(path)
    assert str(info.value).startswith("promo.yaml: events[1].multiplier: must be > 0")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("base_rps: 1\nspeed: 3\n", "bad.yaml: speed: is not a known field"),
        ("base_rps: -1\n", "bad.yaml: base_rps: must be > 0"),
        ("curve: wobbly\n", 'bad.yaml: curve: "wobbly" is not a named curve'),
        ("events: [{type: step, at: noon, multiplier: 2}]\n", "bad.yaml: events[0].at:"),
        ("events: [{type: meteor, at: 1}]\n", "bad.yaml: events[0]"),
        ("mix: {modes: {auto: 0.5, fast: 0.2}}\n", "bad.yaml: mix.modes: fractions must sum to 1"),
        ("mix: {modes: {turbo: 1}}\n", "bad.yaml: mix.modes.turbo"),
        ("mix: {kinds: {image: {fraction: 1, input: image, chars: {median: 5}}}}\n", "bad.yaml: mix.kinds.image.input"),
        ("mix: {kinds: {short: {fraction: 1, chars: {median: 50, min: 90, max: 10}}}}\n", "bad.yaml: mix.kinds.short.chars: min (90)"),
        ("mix: {priorities: {paid: {fraction: 1, deadline_ms: 0}}}\n", "bad.yaml: mix.priorities.paid.deadline_ms: must be > 0"),
        ("- just\n- a list\n", "bad.yaml: the file must hold a mapping"),
        ("base_rps: [1\n", "bad.yaml: the file is not valid YAML at line"),
        ("", "bad.yaml: the file is empty"),
    ],
)
def test_invalid_files_raise_errors_naming_file_and_field(
    write_model: Callable[..., Path], text: str, expected: str
) -> None:
    with pytest.raises(TrafficModelError) as info:
        load_traffic_model(write_model(text, name="bad.yaml"))
    assert expected in str(info.value)


def test_unknown_model_name_lists_the_bundled_ones() -> None:
    with pytest.raises(TrafficModelError, match=r'"black-friday" is neither .*promo-day'):
        load_traffic_model("black-friday")


def test_missing_yaml_path_is_named() -> None:
    with pytest.raises(TrafficModelError, match="nowhere.yaml: the traffic model file does not exist"):
        load_traffic_model(Path("nowhere.yaml"))


def test_replay_with_missing_log_names_the_field(write_model: Callable[..., Path]) -> None:
    path = write_model("replay: {path: gone.csv, format: csv}\n", name="replay.yaml")
    with pytest.raises(TrafficModelError, match=r"replay.yaml: replay.path: .*gone.csv.* does not exist"):
        load_traffic_model(path)


def test_replay_and_events_together_are_rejected(write_model: Callable[..., Path]) -> None:
    text = "replay: {path: x.csv}\nevents: [{type: step, at: 10, multiplier: 2}]\n"
    with pytest.raises(TrafficModelError, match="remove events or replay"):
        load_traffic_model(write_model(text, name="both.yaml"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("base_rps: .inf\n", "bad.yaml: base_rps: must be a finite number (got inf)"),
        ("base_rps: .nan\n", "bad.yaml: base_rps: must be a finite number (got nan)"),
        ("base_rps: 0\n", "bad.yaml: base_rps: must be > 0.0 (got 0)"),
        ("events: [{type: promotion, start: '19:00', hold: 1h, multiplier: .inf}]\n",
         "bad.yaml: events[0].multiplier: must be a finite number (got inf)"),
        ("curve: [['06:00', .inf]]\n", "must be a finite number (got inf)"),
        ("mix: {kinds: {short: {fraction: 1, chars: {median: 50, sigma: .nan}}}}\n",
         "bad.yaml: mix.kinds.short.chars.sigma: must be a finite number (got nan)"),
    ],
)
def test_load_traffic_model_refuses_zero_and_non_finite_numbers(
    write_model: Callable[..., Path], text: str, expected: str
) -> None:
    with pytest.raises(TrafficModelError) as info:
        load_traffic_model(write_model(text, name="bad.yaml"))
    assert expected in str(info.value)


def test_load_traffic_model_refuses_a_curve_point_past_midnight(write_model: Callable[..., Path]) -> None:
    path = write_model("curve: [['25:00', 1.0], ['06:00', 0.5]]\n", name="bad.yaml")
    with pytest.raises(TrafficModelError, match=r"bad\.yaml: curve: a point at 25:00:00 is past midnight"):
        load_traffic_model(path)


def test_load_traffic_model_refuses_a_step_that_ends_before_it_starts(write_model: Callable[..., Path]) -> None:
    path = write_model("events: [{type: step, at: '10:00', multiplier: 2, until: '09:00'}]\n", name="bad.yaml")
    with pytest.raises(TrafficModelError, match=r"bad\.yaml: events\[0\]: until \(09:00:00\) must be after at \(10:00:00\)"):
        load_traffic_model(path)


def test_load_traffic_model_sorts_curve_points_given_out_of_order(write_model: Callable[..., Path]) -> None:
    shuffled = load_traffic_model(write_model("curve: [['12:00', 1.0], ['06:00', 0.5]]\n", name="a.yaml"))
    ordered = load_traffic_model(write_model("curve: [['06:00', 0.5], ['12:00', 1.0]]\n", name="b.yaml"))
    clock = np.linspace(0, 86_399, 97)
    assert np.array_equal(shuffled.rate(clock), ordered.rate(clock))


def test_load_traffic_model_refuses_an_event_after_the_model_ends(write_model: Callable[..., Path]) -> None:
    path = write_model("duration: 1h\nevents: [{type: step, at: '10:00', multiplier: 2}]\n", name="bad.yaml")
    with pytest.raises(TrafficModelError) as info:
        load_traffic_model(path)
    assert str(info.value) == ('bad.yaml: events: item 0 ("step") starts at 10:00:00, at or after the end of the model '
                               "(duration 01:00:00), so it would never happen")


def test_load_traffic_model_names_only_the_curve_form_written(write_model: Callable[..., Path]) -> None:
    with pytest.raises(TrafficModelError) as info:
        load_traffic_model(write_model("curve: [['06:00', -1]]\n", name="bad.yaml"))
    assert str(info.value) == "bad.yaml: curve.points[0][1]: must be >= 0.0 (got -1)"
