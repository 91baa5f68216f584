from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rushhour.traffic_models import TrafficModelError, generate_schedule, load_traffic_model, rate_curve
from rushhour.traffic_models.schedule import COLUMNS

DAY = 86_400.0


def expected_count(model, *, start: float, end: float, time_scale: float = 1.0, rate_scale: float = 1.0) -> float:
    """The integrated rate, computed independently on a half-second grid."""
    grid = np.arange(start, end + 0.25, 0.5)
    return float(np.trapezoid(model.rate(grid), grid)) * rate_scale / time_scale


def within_poisson(count: int, mean: float, sigmas: float = 5.0) -> bool:
    return abs(count - mean) <= sigmas * np.sqrt(mean)


@pytest.fixture(scope="module")
def promo():
    return load_traffic_model("promo-day")


@pytest.fixture(scope="module")
def promo_frame(promo) -> pd.DataFrame:
    return generate_schedule(promo, seed=11)


def test_schedule_has_the_contract_columns_sorted_by_offset(promo_frame: pd.DataFrame) -> None:
    assert list(promo_frame.columns) == COLUMNS
    assert promo_frame["offset_s"].dtype == np.float64
    assert promo_frame["chars"].dtype == np.int32 and promo_frame["deadline_ms"].dtype == np.int32
    assert promo_frame["text_id"].dtype == np.int64
    assert promo_frame["offset_s"].is_monotonic_increasing
    assert promo_frame["offset_s"].between(0, DAY, inclusive="left").all()


def test_schedule_count_matches_the_integrated_rate(promo, promo_frame: pd.DataFrame) -> None:
    assert within_poisson(len(promo_frame), expected_count(promo, start=0, end=DAY))


def test_promo_day_peak_is_about_8x_the_base_on_binned_counts(promo, promo_frame: pd.DataFrame) -> None:
    without_events = promo.model_copy(update={"events": []})
    base = generate_schedule(without_events, seed=12, start_clock_s=19 * 3600, duration_s=3 * 3600)
    hold = promo_frame["offset_s"].between(19 * 3600, 22 * 3600, inclusive="left")
    bins = np.arange(19 * 3600, 22 * 3600 + 1, 900)
    peak_counts = np.histogram(promo_frame.loc[hold, "offset_s"], bins)[0]
    base_counts = np.histogram(base["offset_s"] + 19 * 3600, bins)[0]
    assert peak_counts.sum() / base_counts.sum() == pytest.approx(8.0, rel=0.06)
    assert (peak_counts / base_counts).min() > 6.5
    hour = np.histogram(promo_frame["offset_s"], np.arange(0, DAY + 1, 3600))[0]
    assert np.argmax(hour) in {19, 20, 21}


def test_mix_fractions_match_the_model(promo, promo_frame: pd.DataFrame) -> None:
    mix = promo.mix
    for column, table in (
        ("kind", {k: v.fraction for k, v in mix.kinds.items()}),
        ("priority", {k: v.fraction for k, v in mix.priorities.items()}),
        ("mode", dict(mix.modes)),
    ):
        observed = promo_frame[column].value_counts(normalize=True)
        for name, fraction in table.items():
            assert observed[name] == pytest.approx(fraction, abs=0.01), (column, name)


@pytest.mark.slow
def test_deadlines_and_tenants_follow_the_priority(promo, promo_frame: pd.DataFrame) -> None:
    for name, spec in promo.mix.priorities.items():
        rows = promo_frame[promo_frame["priority"] == name]
        for kind, kind_spec in promo.mix.kinds.items():
            of_kind = rows[rows["kind"] == kind]
            assert len(of_kind) > 0
            assert (of_kind["deadline_ms"] == round(spec.deadline_ms * kind_spec.deadline_factor)).all()
        tenants = set(rows["tenant"].astype(str))
        assert tenants == {f"{name}-{i}" for i in range(spec.tenants)}


def test_lengths_stay_within_each_kinds_bounds_and_median(promo, promo_frame: pd.DataFrame) -> None:
    for name, spec in promo.mix.kinds.items():
        chars = promo_frame.loc[promo_frame["kind"] == name, "chars"]
        assert chars.min() >= spec.chars.min and chars.max() <= spec.chars.max
        unique = promo_frame.loc[promo_frame["kind"] == name].drop_duplicates("text_id")["chars"]
        assert unique.median() == pytest.approx(spec.chars.median, rel=0.1)


def test_a_text_id_always_has_the_same_kind_and_length(promo) -> None:
    first = generate_schedule(promo, seed=1, time_scale=10)
    second = generate_schedule(promo, seed=2, time_scale=10)
    both = pd.concat([first, second])
    per_id = both.groupby("text_id").agg(kinds=("kind", "nunique"), lengths=("chars", "nunique"))
    assert (per_id["kinds"] == 1).all() and (per_id["lengths"] == 1).all()
    assert set(first["text_id"]) & set(second["text_id"])


def test_zipf_repetition_repeats_popular_texts(promo_frame: pd.DataFrame) -> None:
    counts = promo_frame["text_id"].value_counts()
    assert 0.3 < 1 - counts.size / len(promo_frame) < 0.95
    assert counts.iloc[0] > 50 * counts.median()


def test_no_repetition_gives_unique_texts() -> None:
    model = load_traffic_model("constant:50")
    unique = model.model_copy(update={"mix": model.mix.model_copy(update={"repetition": None})})
    frame = generate_schedule(unique, seed=3, duration_s=100)
    assert frame["text_id"].is_unique


@pytest.mark.slow
def test_same_seed_gives_an_identical_frame_and_another_seed_does_not(promo) -> None:
    a = generate_schedule(promo, seed=5, time_scale=20)
    b = generate_schedule(promo, seed=5, time_scale=20)
    c = generate_schedule(promo, seed=6, time_scale=20)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) != len(c) or not np.array_equal(a["offset_s"], c["offset_s"])


def test_time_scale_compresses_the_clock_and_rate_scale_multiplies_the_rate(promo) -> None:
    start, hours = 18 * 3600.0, 4
    frame = generate_schedule(promo, seed=9, time_scale=60, rate_scale=30, start_clock_s=start)
    assert frame["offset_s"].max() <= (DAY - start) / 60
    mean = expected_count(promo, start=start, end=DAY, time_scale=60, rate_scale=30)
    assert within_poisson(len(frame), mean)
    window = generate_schedule(promo, seed=9, time_scale=60, rate_scale=30, start_clock_s=start, duration_s=hours * 60)
    assert window["offset_s"].max() <= hours * 60
    assert within_poisson(len(window), expected_count(promo, start=start, end=start + hours * 3600, time_scale=60, rate_scale=30))


def test_rate_curve_is_the_model_rate_in_compressed_time(promo) -> None:
    offsets, rps = rate_curve(promo, time_scale=60, rate_scale=2)
    assert offsets[0] == 0 and offsets[-1] < DAY / 60
    assert np.all(np.diff(offsets) > 0)
    assert rps.max() == pytest.approx(2 * 8 * promo.base_rate(np.array([19 * 3600.0]))[0], rel=0.05)
    at_noon = np.interp(12 * 60, offsets, rps)
    assert at_noon == pytest.approx(2 * promo.base_rps * 1.0, rel=0.01)


def test_flash_crowd_spikes_and_decays_by_half_life() -> None:
    model = load_traffic_model("flash-crowd")
    at, half = 20 * 60.0, 120.0
    rates = model.rate(np.array([at - 1, at, at + half, at + 2 * half]))
    assert rates.tolist() == pytest.approx([5.0, 50.0, 27.5, 16.25])
    frame = generate_schedule(model, seed=4)
    spike = frame["offset_s"].between(at, at + 60).sum()
    calm = frame["offset_s"].between(at - 120, at - 60).sum()
    assert spike > 6 * calm


def test_step_model_changes_rate_at_the_step() -> None:
    model = load_traffic_model("step")
    frame = generate_schedule(model, seed=8)
    before = frame["offset_s"].between(5 * 60, 15 * 60, inclusive="left").sum()
    after = frame["offset_s"].between(15 * 60, 25 * 60, inclusive="left").sum()
    assert after / before == pytest.approx(2.0, rel=0.12)


def test_constant_model_defaults_to_60_seconds() -> None:
    frame = generate_schedule(load_traffic_model("constant:20"), seed=1)
    assert within_poisson(len(frame), 1200) and frame["offset_s"].max() < 60


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"time_scale": 0}, "time_scale must be"),
        ({"rate_scale": -1}, "rate_scale must be"),
        ({"duration_s": 0}, "duration must be"),
        ({"start_clock_s": 90_000}, "start_clock must be before the end"),
        ({"seed": -4}, "seed must be"),
    ],
)
def test_bad_arguments_raise_traffic_model_error(promo, kwargs: dict, message: str) -> None:
    args = {"seed": 1, **kwargs}
    with pytest.raises(TrafficModelError, match=message):
        generate_schedule(promo, **args)


def test_zero_rate_scale_gives_an_empty_schedule_with_the_columns(promo) -> None:
    frame = generate_schedule(promo, seed=1, rate_scale=0)
    assert frame.empty and list(frame.columns) == COLUMNS


def test_documents_get_their_kinds_longer_deadline(promo, promo_frame: pd.DataFrame) -> None:
    factor = promo.mix.kinds["document"].deadline_factor
    assert factor > 1
    paid = promo_frame[promo_frame["priority"] == "paid"]
    short = paid.loc[paid["kind"] == "short", "deadline_ms"].iloc[0]
    document = paid.loc[paid["kind"] == "document", "deadline_ms"].iloc[0]
    assert document == round(short * factor)


def test_schedule_dtypes_are_the_ones_the_contract_declares(promo_frame: pd.DataFrame) -> None:
    from rushhour.kernel.contract import SCHEDULE_COLUMNS

    assert {name: str(dtype) for name, dtype in promo_frame.dtypes.items()} == SCHEDULE_COLUMNS
