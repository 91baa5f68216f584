"""The interleaving design of an A/B run: each row's arm, and the pairs the verdict compares.

`requests` (the default) sends the schedule's rows in twos: the first of two to an arm drawn at
random, the second to the other arm carrying the first's request (text, length, priority, mode,
tenant) at its own send time. Both arms are loaded at once, share every moment's noise (the
neighbour's bursts included) and answer the same texts, so the part of a latency a text sets (its
length) weighs on both alike; the two arms' requests of the same time slice form a pair. The run's
schedule is drawn at twice the scenario's rate (`rushhour.scenarios.cli.ab`), so each arm carries
the scenario's load.

`trials` cuts the schedule by intended send time into `trials` equal slices. Consecutive trials
form blocks of four, each either ABBA or BAAB, the order drawn from the seed: every block holds two
trials of each arm, a linear drift of the machine inside a block weighs on both arms alike, and a
periodic neighbour cannot line up with one arm. Only one arm is under load at a time, so two
servers whose work competes for the same cores (a CPU-bound candidate) do not slow each other;
adjacent trials meet different moments of the machine, which costs power (docs/ab.md).

Two guards against a server that remembers: the first `warmup_pairs` pairs warm both arms with the
same requests byte for byte (in twos as above, in either design) and are left out of the verdict,
and every text id is turned by the night's `text_salt` (a bijection, so the night's own repeats
stay repeats), so a long-lived baseline has not seen the night's texts the night before. A
conversation's turns are never sent in twos: they keep their drawn arm (its answers belong to one
server).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rushhour.kernel.contract import AB_COLUMNS, SCHEDULE_COLUMNS, columns_of
from rushhour.traffic_models.sessions import SESSION_COLUMNS

ARMS = ("baseline", "candidate")
INTERLEAVES = ("requests", "trials")
BLOCK = 4
BLOCK_ORDERS = (("baseline", "candidate", "candidate", "baseline"), ("candidate", "baseline", "baseline", "candidate"))
WARMUP_SHARE = 0.1
"""Of the pairs, the share at the start that warms both arms and is not judged."""
TEXT_ID_BITS = 50
"""Text salts stay below 2**50, so a salted id keeps clear of the answer and block id ranges."""
OWN_COLUMNS = (*columns_of(SCHEDULE_COLUMNS, "offset_s", "phase"), *columns_of(SESSION_COLUMNS, "session"),
               *columns_of(AB_COLUMNS, "trial", "arm"), "base_url")
"""The columns a warm-up row keeps for itself (when, the phase, the conversation, its trial and arm,
and the arm's URL this module adds); every other column is the request, copied."""
TARGET_TRIAL_S = 2.5
"""The default trial length: short enough for many pairs in a minute, long enough that the
stragglers of one trial (answers still in flight when the next begins) are a small share."""

__all__ = ["ARMS", "RowAssigner", "TrialDesign", "assign_rows", "assigned_chunks", "default_trials", "text_salt"]


class DesignError(ValueError):
    """The requested trials cannot be laid out over this schedule."""


@dataclass(frozen=True)
class TrialDesign:
    """`trials` trials; `arms[k]` is the arm of trial k, and trials 2k and 2k+1 form pair k.

    With `interleave` "trials" each trial is a slice of `trial_s` seconds; with "requests" pair k is
    one slice of `trial_s` seconds and its two trials are the two arms' requests in it.
    """

    trials: int
    trial_s: float
    arms: tuple[str, ...]
    seed: int
    interleave: str = "trials"
    warmup_pairs: int = 0
    text_salt: int = 0

    @classmethod
    def build(cls, duration_s: float, trials: int, seed: int, interleave: str = "trials", *,
              warmup: bool = False, fresh_texts: bool = False) -> TrialDesign:
        """Lay out `trials` trials (a multiple of four) over `duration_s`, the block order from `seed`;
        with `warmup` the first WARMUP_SHARE of pairs warm both arms, with `fresh_texts` the night's
        text ids are salted from the seed."""
        if trials < BLOCK or trials % BLOCK:
            raise DesignError(f"--trials {trials}: the trials form ABBA blocks, so it must be a multiple of "
                              f"{BLOCK} (4, 8, 12, ...).")
        if duration_s <= 0:
            raise DesignError(f"the scenario's duration ({duration_s:g} s) must be longer than zero.")
        warm = int(WARMUP_SHARE * trials // 2) if warmup else 0
        salt = text_salt(seed) if fresh_texts else 0
        if interleave == "requests":
            return cls(trials=trials, trial_s=2.0 * duration_s / trials, arms=ARMS * (trials // 2), seed=seed,
                       interleave=interleave, warmup_pairs=warm, text_salt=salt)
        rng = np.random.default_rng([seed, 0xAB])
        picks = rng.integers(0, len(BLOCK_ORDERS), size=trials // BLOCK)
        arms = tuple(arm for pick in picks for arm in BLOCK_ORDERS[int(pick)])
        return cls(trials=trials, trial_s=duration_s / trials, arms=arms, seed=seed, warmup_pairs=warm,
                   text_salt=salt)

    def bounds(self, trial: int) -> tuple[float, float]:
        """Start and end (seconds from the run's start) of one trial (of its slice, per request)."""
        slot = trial // 2 if self.interleave == "requests" else trial
        return slot * self.trial_s, (slot + 1) * self.trial_s

    def pair_of(self) -> np.ndarray:
        """Per trial, its pair: trials 2k and 2k+1 hold one of each arm (AB|BA inside every block)."""
        return np.arange(self.trials) // 2

    def as_dict(self) -> dict[str, object]:
        return {"trials": self.trials, "trial_s": self.trial_s, "arms": list(self.arms), "seed": self.seed,
                "interleave": self.interleave, "warmup_pairs": self.warmup_pairs, "text_salt": self.text_salt}


def text_salt(seed: int) -> int:
    """The night's text salt, drawn from its seed (never 0, below 2**TEXT_ID_BITS)."""
    return int(np.random.default_rng([seed, 0x7E47]).integers(1, 1 << TEXT_ID_BITS))


def default_trials(duration_s: float) -> int:
    """Trials of about TARGET_TRIAL_S each, a multiple of four, at least four."""
    blocks = max(1, round(duration_s / (TARGET_TRIAL_S * BLOCK)))
    return BLOCK * int(blocks)


def assign_rows(schedule: pd.DataFrame, design: TrialDesign, urls: dict[str, str]) -> pd.DataFrame:
    """The schedule with each row's `trial`, `arm` and `base_url` (the arm's target) added.

    A row belongs to the trial whose slice holds its intended send time; rows are never moved
    or dropped, so the two arms together replay exactly the scenario's schedule. A conversation's
    turns all go where its first turn goes: one arm serves the whole conversation.
    """
    return RowAssigner(design, urls).assign(schedule)


def assigned_chunks(chunks: Iterable[pd.DataFrame], design: TrialDesign, urls: dict[str, str]
                    ) -> Iterator[pd.DataFrame]:
    """`assign_rows` over a schedule given a chunk of rows at a time, in order; laid end to end, the
    chunks it yields equal `assign_rows` of the whole schedule (tests/scenarios/ab/test_trials.py)."""
    assigner = RowAssigner(design, urls)
    for chunk in chunks:
        yield assigner.assign(chunk)


class RowAssigner:
    """Assigns the rows of one schedule, fed to it in order, to their trials and arms.

    Each row's coin (the per-request design) comes from one stream drawn in row order, a chunk's
    rows at a time; numpy draws uniforms one by one, so the pieces hold the numbers one draw for
    the whole schedule would. A conversation whose first turn lay in a chunk before this one keeps that
    turn's trial: the sessions seen are remembered (a schedule of conversations comes whole anyway).
    """

    def __init__(self, design: TrialDesign, urls: dict[str, str]) -> None:
        self.design = design
        self.urls = urls
        self._coins = np.random.default_rng([design.seed, 0xC0])
        self._sessions: dict[int, int] = {}
        self._twos = 0
        self._pending: dict[str, object] = {}
        self._pending_arm = ""

    def assign(self, chunk: pd.DataFrame) -> pd.DataFrame:
        """The next rows of the schedule with their `trial`, `arm` and `base_url` added."""
        trial = self._follow_sessions(chunk, self._own_trials(chunk["offset_s"].to_numpy(dtype=float)))
        out = chunk.copy()
        trial = self._same_requests(out, trial)
        arm = np.asarray(self.design.arms, dtype=object)[trial]
        out["trial"] = trial.astype(AB_COLUMNS["trial"])
        out["arm"] = arm.astype(AB_COLUMNS["arm"])
        out["base_url"] = pd.Series(arm).map(self.urls).to_numpy(dtype=object)
        if self.design.text_salt and "text_id" in out:
            out["text_id"] = out["text_id"].to_numpy(np.int64) ^ np.int64(self.design.text_salt)
        return out

    def _same_requests(self, out: pd.DataFrame, trial: np.ndarray) -> np.ndarray:
        """Rows outside conversations (all of them in the per-request design, the warm-up's in the
        trials design) go in twos, counted over the whole schedule: the first keeps its drawn arm, the
        second goes to the other arm carrying the first's request; returns the trials."""
        lone = out["session"].to_numpy(dtype=np.int64) < 0 if "session" in out else np.ones(len(out), bool)
        every = self.design.interleave == "requests"
        rows = np.flatnonzero(lone & ((trial // 2 < self.design.warmup_pairs) | every))
        if not rows.size:
            return trial
        second = (self._twos + np.arange(rows.size)) % 2 == 1
        self._twos += rows.size
        arms = np.asarray(self.design.arms, dtype=object)
        drawn = arms[trial[rows]]
        before = np.concatenate([[self._pending_arm], drawn[:-1]])
        at = np.flatnonzero(second)
        other = np.where(before[at] == ARMS[0], ARMS[1], ARMS[0])
        trial = trial.copy()
        first = 2 * (trial[rows[at]] // 2)
        trial[rows[at]] = np.where(arms[first] == other, first, first + 1)
        payload = [c for c in out.columns if c not in OWN_COLUMNS]
        for column in payload:
            values = out[column].to_numpy(copy=True)
            inside = at[at > 0]
            values[rows[inside]] = values[rows[inside - 1]]
            if at.size and at[0] == 0:
                values[rows[0]] = self._pending[column]
            out[column] = values
        if not second[-1]:
            self._pending, self._pending_arm = {c: out[c].iloc[rows[-1]] for c in payload}, str(drawn[-1])
        return trial

    def _own_trials(self, offsets: np.ndarray) -> np.ndarray:
        """Each row's trial were it the first turn of its conversation (every row draws its coin)."""
        design = self.design
        if design.interleave == "requests":
            slot = np.clip(np.floor(offsets / design.trial_s).astype(np.int64), 0, design.trials // 2 - 1)
            return 2 * slot + (self._coins.random(offsets.size) < 0.5)
        return np.clip(np.floor(offsets / design.trial_s).astype(np.int64), 0, design.trials - 1)

    def _follow_sessions(self, chunk: pd.DataFrame, own: np.ndarray) -> np.ndarray:
        """Each turn of a conversation takes its first turn's trial, in this chunk or an earlier one."""
        if "session" not in chunk:
            return own
        session = chunk["session"].to_numpy(dtype=np.int64)
        rows = np.arange(len(chunk))
        first = pd.Series(rows).groupby(session).transform("min").to_numpy()
        trial = np.where(session >= 0, own[first], own)
        earlier = pd.Series(session).map(self._sessions).to_numpy(dtype=float)
        known = (session >= 0) & ~np.isnan(earlier)
        trial[known] = earlier[known].astype(np.int64)
        leads = (session >= 0) & (first == rows) & ~known
        self._sessions.update(zip(session[leads].tolist(), trial[leads].tolist(), strict=True))
        return trial
