"""Multi-turn sessions in the schedule: synthetic conversations and replayed session ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rushhour.traffic_models import TrafficModelError, generate_schedule, load_traffic_model

CONVERSATIONS = """\
timestamp,session_id,tokens,max_tokens
0.0,a,100,10
0.5,b,50,5
2.0,a,120,12
3.0,a,130,13
4.0,b,60,6
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_synthetic_sessions_have_their_turns_and_constant_think_times(tmp_path: Path) -> None:
    model = load_traffic_model(_write(tmp_path, "duration: 200\nbase_rps: 1\nsessions: "
                                      "{turns_min: 2, turns_max: 4, think: 6s, think_distribution: constant}\n"))
    frame = generate_schedule(model, seed=5, time_scale=2)
    turns = frame.groupby("session")["turn"].agg(["min", "max", "count"])
    assert (turns["min"] == 0).all() and turns["max"].between(1, 3).all()
    assert (turns["count"] == turns["max"] + 1).all()
    assert set(turns["count"]) == {2, 3, 4}
    later = frame[frame["turn"] > 0]
    assert np.allclose(later["think_s"], 3.0) and (frame.loc[frame["turn"] == 0, "think_s"] == 0).all()
    first = frame[frame["turn"] == 0].set_index("session")["offset_s"]
    earliest = first.reindex(later["session"]).to_numpy() + 3.0 * later["turn"].to_numpy()
    assert np.allclose(later["offset_s"], earliest)
    assert frame["offset_s"].is_monotonic_increasing


def test_exponential_think_times_have_the_mean(tmp_path: Path) -> None:
    model = load_traffic_model(_write(tmp_path, "duration: 2000\nbase_rps: 2\nsessions: {think: 10}\n"))
    think = generate_schedule(model, seed=2).query("turn > 0")["think_s"]
    assert len(think) > 5000 and abs(think.mean() - 10.0) < 0.5


def test_replayed_conversations_keep_their_turns_in_order(tmp_path: Path) -> None:
    (tmp_path / "conv.csv").write_text(CONVERSATIONS, encoding="utf-8")
    model = load_traffic_model(_write(tmp_path, "replay: {path: conv.csv, chars_per_token: 1}\n"))
    frame = generate_schedule(model, seed=1, time_scale=2, rate_scale=2)
    assert frame["chars"].tolist() == [100, 50, 120, 130, 60]
    assert frame["session"].tolist() == [0, 1, 0, 0, 1] and frame["turn"].tolist() == [0, 0, 1, 2, 1]
    assert np.allclose(frame["think_s"], [0, 0, 1.0, 0.5, 1.75])
    assert np.allclose(frame["offset_s"], [0, 0.25, 1.0, 1.5, 2.0])


def test_a_doubled_replay_copies_whole_conversations(tmp_path: Path) -> None:
    (tmp_path / "conv.csv").write_text(CONVERSATIONS, encoding="utf-8")
    model = load_traffic_model(_write(tmp_path, "replay: {path: conv.csv, chars_per_token: 1, jitter: 0}\n"))
    frame = generate_schedule(model, seed=1, rate_scale=2)
    assert frame["session"].nunique() == 4 and len(frame) == 10
    assert sorted(frame.groupby("session").size()) == [2, 2, 3, 3]


def test_sessions_on_a_replay_are_refused(tmp_path: Path) -> None:
    (tmp_path / "conv.csv").write_text(CONVERSATIONS, encoding="utf-8")
    with pytest.raises(TrafficModelError, match="session_id"):
        load_traffic_model(_write(tmp_path, "replay: {path: conv.csv}\nsessions: {think: 1}\n"))


def test_turn_bounds_out_of_order_are_named(tmp_path: Path) -> None:
    with pytest.raises(TrafficModelError, match="turns_min"):
        load_traffic_model(_write(tmp_path, "sessions: {turns_min: 5, turns_max: 2}\n"))
