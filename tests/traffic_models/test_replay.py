from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.traffic_models import TrafficModelError, generate_schedule, load_traffic_model, phases, rate_curve
from rushhour.traffic_models.replay import Trace, replay_rate

AZURE_ROWS = 19_366


@pytest.fixture
def azure_model(azure_trace: Path, write_model: Callable[..., Path]):
    text = f"replay: {{path: {azure_trace}, format: azure-llm, chars_per_token: 4}}\n"
    return load_traffic_model(write_model(text, name="azure.yaml"))


def per_minute(seconds: np.ndarray, span: float) -> np.ndarray:
    return np.histogram(seconds, np.arange(0, span + 60, 60))[0]


def test_azure_replay_sends_every_logged_request(azure_model, azure_trace: Path) -> None:
    frame = generate_schedule(azure_model, seed=1)
    raw = pd.read_csv(azure_trace)
    assert len(frame) == len(raw) == AZURE_ROWS
    assert azure_model.duration == pytest.approx(3501.72, abs=0.1)
    assert sorted(frame["chars"]) == sorted(raw["ContextTokens"].clip(lower=1) * 4)
    assert frame["text_id"].is_unique


def test_azure_replay_compresses_time_and_keeps_burstiness(azure_model) -> None:
    full = generate_schedule(azure_model, seed=1)
    fast = generate_schedule(azure_model, seed=1, time_scale=10, rate_scale=10)
    assert len(fast) == len(full)
    assert fast["offset_s"].max() == pytest.approx(full["offset_s"].max() / 10)
    original = per_minute(full["offset_s"].to_numpy(), azure_model.duration)
    replayed = per_minute(fast["offset_s"].to_numpy() * 10, azure_model.duration)
    assert np.array_equal(original, replayed)
    assert original.max() / original.min() > 3


@pytest.mark.slow
def test_azure_replay_thins_and_duplicates_reproducibly(azure_model) -> None:
    thin = generate_schedule(azure_model, seed=2, rate_scale=0.25)
    assert abs(len(thin) - AZURE_ROWS / 4) < 5 * np.sqrt(AZURE_ROWS / 4)
    double = generate_schedule(azure_model, seed=2, rate_scale=2.5)
    assert abs(len(double) - 2.5 * AZURE_ROWS) < 5 * np.sqrt(AZURE_ROWS)
    assert double["offset_s"].is_monotonic_increasing
    original = per_minute(generate_schedule(azure_model, seed=2)["offset_s"].to_numpy(), azure_model.duration)
    for frame in (thin, double):
        counts = per_minute(frame["offset_s"].to_numpy(), azure_model.duration)
        assert np.corrcoef(original, counts)[0, 1] > 0.9
    pd.testing.assert_frame_equal(double, generate_schedule(azure_model, seed=2, rate_scale=2.5))
    copies = double.groupby("text_id")["offset_s"].agg(["count", "min", "max"])
    assert (copies["count"] >= 2).all() and ((copies["max"] - copies["min"]) <= 2.0).all()


def test_azure_replay_rate_curve_and_window(azure_model) -> None:
    offsets, rps = rate_curve(azure_model, step_s=60)
    frame = generate_schedule(azure_model, seed=1)
    counts = per_minute(frame["offset_s"].to_numpy(), azure_model.duration)[: offsets.size]
    assert np.corrcoef(rps[:-1] * 60, counts[:-1])[0, 1] > 0.99
    part = generate_schedule(azure_model, seed=1, start_clock_s=600, duration_s=300)
    assert len(part) == ((frame["offset_s"] >= 600) & (frame["offset_s"] < 900)).sum()
    assert [p.name for p in phases(azure_model)] == ["warm-up", "base"]


def test_csv_and_jsonl_logs_with_priorities(tmp_path: Path, write_model: Callable[..., Path]) -> None:
    rows = [{"timestamp": 100 + i * 0.5, "chars": 10 + i, "priority": ["paid", "free"][i % 2]} for i in range(40)]
    pd.DataFrame(rows).to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "log.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    frames = []
    for fmt, name in (("csv", "log.csv"), ("jsonl", "log.jsonl")):
        model = load_traffic_model(write_model(f"replay: {{path: {name}, format: {fmt}}}\n", name=f"{fmt}.yaml"))
        frames.append(generate_schedule(model, seed=0))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    frame = frames[0]
    assert frame["offset_s"].tolist() == pytest.approx([i * 0.5 for i in range(40)])
    assert frame["priority"].astype(str).tolist() == [r["priority"] for r in rows]
    assert (frame.loc[frame["priority"] == "paid", "deadline_ms"] == 2000).all()


def test_log_without_sizes_draws_them_from_the_mix(tmp_path: Path, write_model: Callable[..., Path]) -> None:
    stamps = pd.date_range("2024-05-01 12:00", periods=500, freq="250ms")
    pd.DataFrame({"time": stamps.astype(str)}).to_csv(tmp_path / "stamps.csv", index=False)
    model = load_traffic_model(write_model("replay: {path: stamps.csv}\n"))
    frame = generate_schedule(model, seed=0)
    assert len(frame) == 500 and set(frame["kind"].astype(str)) == {"short", "document"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("when,chars\n1,2\n", "the log has no timestamp or time or ts or offset_s column"),
        ("timestamp,chars\nmonday,2\n", "column timestamp holds values that are not timestamps"),
        ("timestamp,chars\n1,-2\n", "column chars must hold non-negative numbers"),
    ],
)
def test_bad_logs_are_named(tmp_path: Path, write_model: Callable[..., Path], content: str, message: str) -> None:
    (tmp_path / "bad.csv").write_text(content)
    with pytest.raises(TrafficModelError, match=f"log.yaml: replay.path: bad.csv: {message}"):
        load_traffic_model(write_model("replay: {path: bad.csv}\n", name="log.yaml"))


def test_unknown_logged_priority_is_named(tmp_path: Path, write_model: Callable[..., Path]) -> None:
    (tmp_path / "p.csv").write_text("timestamp,priority\n1,vip\n2,paid\n")
    model = load_traffic_model(write_model("replay: {path: p.csv}\n"))
    with pytest.raises(TrafficModelError, match=r"p.csv: column priority has \['vip'\]"):
        generate_schedule(model, seed=0)


@pytest.mark.parametrize("line", ["[1,2]", "3", '"x"'])
def test_load_trace_names_a_jsonl_line_that_is_not_an_object(
    tmp_path: Path, write_model: Callable[..., Path], line: str
) -> None:
    (tmp_path / "bad.jsonl").write_text(f'{{"timestamp": 0, "chars": 10}}\n{line}\n{{"timestamp": 2}}\n')
    with pytest.raises(TrafficModelError) as info:
        load_traffic_model(write_model("replay: {path: bad.jsonl, format: jsonl}\n", name="log.yaml"))
    assert str(info.value) == f'log.yaml: replay.path: bad.jsonl: line 2 is {line}, not a JSON object such as {{"timestamp": 12.5}}.'


def test_load_trace_names_a_jsonl_line_that_is_not_json(tmp_path: Path, write_model: Callable[..., Path]) -> None:
    (tmp_path / "bad.jsonl").write_text('{"timestamp": 0}\n\n{"timestamp": 1\n')
    with pytest.raises(TrafficModelError, match=r"bad\.jsonl: line 3 is not valid JSON \("):
        load_traffic_model(write_model("replay: {path: bad.jsonl, format: jsonl}\n", name="log.yaml"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("timestamp,chars\n5,100\n5,200\n5,1\n", "every request in column timestamp carries the same time"),
        ("timestamp,chars\n0,100\n1e300,200\n", r"column timestamp spans 1e\+300 s from first to last request, "
                                                r"past the 31622400 s \(366 days\)"),
    ],
)
def test_load_trace_refuses_a_log_of_no_length_or_absurd_length(
    tmp_path: Path, write_model: Callable[..., Path], content: str, message: str
) -> None:
    (tmp_path / "log.csv").write_text(content)
    with pytest.raises(TrafficModelError, match=f"log.yaml: replay.path: log.csv: {message}"):
        load_traffic_model(write_model("replay: {path: log.csv}\n", name="log.yaml"))


def test_replay_rate_of_an_empty_bin_is_zero_not_nan() -> None:
    trace = Trace(clock_s=np.array([0.0, 0.5, 1.5]), chars=None, priority=None)
    assert replay_rate(trace, np.array([0.0, 1.0, 1.0, 2.0])).tolist() == [2.0, 0.0, 1.0]
