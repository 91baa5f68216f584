"""Multi-turn conversations: sessions that start at the model's rate, each a chain of turns.

A session's first turn arrives open-loop like any request; each later turn is sent when the
answer before it has ended plus a think time, so its send time is only known during the run.
The schedule therefore gives every turn its session, its turn number and its think time, and an
`offset_s` that is the earliest it could go (the session's start plus the think times before
it); the load generator records the real intended send.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from rushhour.traffic_models.fields import Clock, Strict

SESSION_COLUMNS = ("session", "turn", "think_s")


class SessionSpec(Strict):
    """Synthetic conversations: how many turns each has, and how long people think between them."""

    turns_min: Annotated[int, Field(ge=1, description="fewest turns in a session")] = 2
    turns_max: Annotated[int, Field(ge=1, description="most turns in a session (uniform between)")] = 6
    think: Clock = Field(default=10.0, ge=0, description="mean think time after an answer, model seconds")
    think_distribution: Literal["exponential", "constant"] = Field(
        default="exponential", description="exponential around the mean, or always the mean")

    @model_validator(mode="after")
    def _ordered(self) -> SessionSpec:
        if self.turns_min > self.turns_max:
            raise ValueError(f"turns_min ({self.turns_min}) must not exceed turns_max ({self.turns_max})")
        return self


def synthetic_sessions(
    spec: SessionSpec, starts: np.ndarray, time_scale: float, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Earliest offsets of every turn and the session columns, one session per start offset."""
    turns = rng.integers(spec.turns_min, spec.turns_max + 1, starts.size)
    session = np.repeat(np.arange(starts.size, dtype=np.int64), turns)
    turn = _turn_numbers(turns)
    if spec.think_distribution == "constant":
        think = np.full(session.size, spec.think)
    else:
        think = rng.exponential(spec.think, session.size) if spec.think > 0 else np.zeros(session.size)
    think = np.where(turn == 0, 0.0, think) / time_scale
    return starts[session] + _within(think, turns), {"session": session, "turn": turn, "think_s": think}


def replayed_sessions(
    session_codes: np.ndarray, clock_s: np.ndarray, first_offsets: np.ndarray, first_rows: np.ndarray,
    time_scale: float,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Every turn of the sessions whose first turns were picked: offsets, trace rows, columns.

    The logged gap between two turns becomes the think time after the first one's answer, so a
    replayed conversation never runs ahead of its answers.
    """
    grouped = np.lexsort((clock_s, session_codes))
    sizes = np.bincount(session_codes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    picked = session_codes[first_rows]
    turns = sizes[picked]
    turn = _turn_numbers(turns)
    rows = grouped[np.repeat(starts[picked], turns) + turn]
    since_first = (clock_s[rows] - np.repeat(clock_s[first_rows], turns)) / time_scale
    think = np.where(turn == 0, 0.0, np.diff(since_first, prepend=0.0))
    session = np.repeat(np.arange(first_rows.size, dtype=np.int64), turns)
    offsets = np.repeat(first_offsets, turns) + since_first
    return offsets, rows, {"session": session, "turn": turn, "think_s": think}


def first_turns(session_codes: np.ndarray) -> np.ndarray:
    """Rows (of a time-sorted trace) that open a session, in time order."""
    _, first = np.unique(session_codes, return_index=True)
    return np.sort(first)


def _turn_numbers(turns: np.ndarray) -> np.ndarray:
    """0, 1, ... within each session, for sessions of the given sizes laid end to end."""
    ends = np.cumsum(turns)
    return (np.arange(int(ends[-1]) if turns.size else 0) - np.repeat(ends - turns, turns)).astype(np.int32)


def _within(think: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """Sum of the think times up to each turn, restarting at every session."""
    total = np.cumsum(think)
    ends = np.cumsum(turns)
    before = np.concatenate([[0.0], total[ends[:-1] - 1]]) if turns.size else np.zeros(0)
    return total - np.repeat(before, turns)
