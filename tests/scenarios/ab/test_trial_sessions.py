"""A/B trials and conversations: every turn of a conversation goes to the arm of its first turn."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rushhour.scenarios.ab.trials import TrialDesign, assign_rows, assigned_chunks
from rushhour.traffic_models import generate_schedule, load_traffic_model

URLS = {"baseline": "http://127.0.0.1:1", "candidate": "http://127.0.0.1:2"}


@pytest.mark.parametrize("interleave", ["trials", "requests"])
def test_a_conversation_stays_on_one_arm(tmp_path: Path, interleave: str) -> None:
    model = tmp_path / "model.yaml"
    model.write_text("duration: 40\nbase_rps: 3\nsessions: {turns_min: 3, turns_max: 5, think: 4s}\n")
    schedule = generate_schedule(load_traffic_model(model), seed=3)
    rows = assign_rows(schedule, TrialDesign.build(40.0, 8, seed=1, interleave=interleave), URLS)
    per_session = rows.groupby("session").agg(arms=("arm", "nunique"), trials=("trial", "nunique"))
    assert (per_session["arms"] == 1).all() and (per_session["trials"] == 1).all()
    assert set(rows["arm"]) == set(URLS) and len(rows) == len(schedule)


@pytest.mark.parametrize("interleave", ["trials", "requests"])
def test_a_conversation_split_across_chunks_keeps_its_first_turns_arm(tmp_path: Path, interleave: str) -> None:
    model = tmp_path / "model.yaml"
    model.write_text("duration: 40\nbase_rps: 3\nsessions: {turns_min: 3, turns_max: 5, think: 4s}\n")
    schedule = generate_schedule(load_traffic_model(model), seed=3)
    design = TrialDesign.build(40.0, 8, seed=1, interleave=interleave)
    chunks = [schedule.iloc[start:start + 5] for start in range(0, len(schedule), 5)]
    rows = pd.concat(list(assigned_chunks(chunks, design, URLS)))
    pd.testing.assert_frame_equal(rows, assign_rows(schedule, design, URLS))
    assert rows.groupby("session")["trial"].nunique().max() == 1
