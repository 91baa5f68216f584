"""Trace prompts and conversations on the wire: what a ground-truth chat server received.

The replay test fires a Mooncake trace and reads the server's log (max_tokens as logged, prompt
lengths, identical text for shared hash ids). The session test runs synthetic conversations
against a server that refuses any turn not carrying the turns before it and the answers it
streamed to them, and checks that each later turn was intended its think time after the answer
before it ended.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from rushhour.scenarios.generator.openloop import worker_share
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.traffic_models import generate_schedule, load_traffic_model, text_for
from tests.scenarios.generator.truth import fire, share_of
from tests.support.targets import StreamPlan, TargetState, serve_target

MOONCAKE = """\
{"timestamp": 0, "input_length": 1200, "output_length": 10, "hash_ids": [46, 47, 48]}
{"timestamp": 250, "input_length": 1100, "output_length": 20, "hash_ids": [46, 47, 49]}
{"timestamp": 500, "input_length": 300, "output_length": 7, "hash_ids": [50]}
{"timestamp": 750, "input_length": 1030, "output_length": 12, "hash_ids": [46, 47, 51]}
"""
SESSIONS = "duration: 4\nbase_rps: 1\nsessions: {turns_min: 3, turns_max: 3, think: 0.4s, think_distribution: constant}\n"
FAST = StreamPlan(tokens=64, first_s=0.05, every_s=0.004, stall_at=None)


def _schedule(tmp_path: Path, model_text: str, **files: str) -> pd.DataFrame:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "model.yaml").write_text(model_text, encoding="utf-8")
    return generate_schedule(load_traffic_model(tmp_path / "model.yaml"), seed=4)


def _fire(url: str, schedule: pd.DataFrame, work: Path) -> pd.DataFrame:
    path = work / "schedule.parquet"
    schedule.to_parquet(path, index=False)
    duration = float(schedule["offset_s"].max()) + 3.0
    settings = LoadSettings(host=url, schedule_path=path, work_dir=work / "load", duration_s=duration,
                            request_timeout_s=10.0, max_timeout_s=11.0,
                            target={"protocol": "openai-chat", "model": "truth"})
    return fire(settings, schedule, grace_s=40.0)[0]


class TurnChecker:
    """Refuses a turn unless it repeats, word for word, the last turn seen of its conversation
    followed by the answer this server streamed to it ("t0 t1 ..."), and is the next turn of it."""

    def __init__(self, plan: StreamPlan) -> None:
        self.plan = plan
        self.seen: dict[str, list[dict]] = {}
        self.answered: dict[str, str] = {}
        self.turns = 0

    def __call__(self, body: dict) -> str | None:
        messages = body.get("messages") or []
        if not messages or messages[-1].get("role") != "user":
            return "the last message is not the user's turn"
        opener = messages[0]["content"]
        earlier = self.seen.get(opener, [])
        if messages[:-2] != earlier or (len(messages) > 1 and messages[-2].get("role") != "assistant"):
            return f"turn {len(messages) // 2} does not carry the {len(earlier) // 2 + 1} turns before it"
        if len(messages) > 1 and messages[-2]["content"] != self.answered[opener]:
            return f"turn {len(messages) // 2} carries {messages[-2]['content'][:20]!r}, not the answer it got"
        self.seen[opener] = messages
        self.answered[opener] = "".join(f"t{k} " for k in range(len(self.plan.offsets(body["max_tokens"]))))
        self.turns += 1
        return None


def test_a_plan_s_turns_carry_their_history_and_stay_on_one_worker(tmp_path: Path) -> None:
    schedule = _schedule(tmp_path, SESSIONS)
    assert (schedule.groupby("session").size() == 3).all()
    shares = [worker_share(pa.Table.from_pandas(schedule, preserve_index=False), k, 2).to_pandas() for k in range(2)]
    assert all(share.groupby("session").size().eq(3).all() for share in shares)
    plan = share_of(shares[0], text_for=text_for)
    first, second, third = plan.sessions[int(plan.columns.session[0])]
    turns = [cast("list[dict[str, str]]", plan.payload(i)["messages"]) for i in (first, second, third)]
    assert [len(m) for m in turns] == [1, 3, 5]
    assert turns[2][:3] == turns[1] and turns[1][:1] == turns[0]
    assert turns[2][-1]["content"] == text_for(plan.columns.text_id[third], plan.columns.chars[third])
    got = cast("list[dict[str, str]]", plan.payload(third, {first: "first answer", second: "second"})["messages"])
    assert [m["content"] for m in got[1::2]] == ["first answer", "second"] and got[::2] == turns[2][::2]


@pytest.mark.timeout(120)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_a_mooncake_replay_reaches_the_server_as_logged(tmp_path: Path) -> None:
    schedule = _schedule(tmp_path, "replay: {path: t.jsonl, format: mooncake, chars_per_token: 1}\n", **{"t.jsonl": MOONCAKE})
    with serve_target() as (url, state):
        state.plan = FAST
        requests = _fire(url, schedule, tmp_path)
        bodies = [b for b in state.bodies if b.get("model") == "truth" and b.get("max_tokens") != 8]
    assert requests["ok"].all(), requests["error"].value_counts()
    got = {b["max_tokens"]: b["messages"] for b in bodies}
    assert sorted(got) == [7, 10, 12, 20] and all(len(m) == 1 for m in got.values())
    prompts = {k: m[0]["content"] for k, m in got.items()}
    assert {k: len(p) for k, p in prompts.items()} == {10: 1200, 20: 1100, 7: 300, 12: 1030}
    assert prompts[10][:1024] == prompts[20][:1024] == prompts[12][:1024]
    assert len(os.path.commonprefix([prompts[10], prompts[20]])) < 1024 + 20
    assert len(os.path.commonprefix([prompts[10], prompts[7]])) < 20
    assert (requests["output_tokens"] == requests["max_tokens"]).all()


@pytest.mark.timeout(120)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_sessions_carry_each_turn_and_wait_for_the_answer_and_think_time(tmp_path: Path) -> None:
    schedule = _schedule(tmp_path, SESSIONS + "mix: {kinds: {short: {fraction: 1, chars: {median: 80, max: 200}, "
                                              "max_tokens: {median: 20, sigma: 0, max: 20}}}}\n")
    checker = TurnChecker(FAST)
    with serve_target(TargetState(plan=FAST, check=checker)) as (url, _state):
        requests = _fire(url, schedule, tmp_path)
    assert requests["ok"].all(), requests["error"].value_counts()
    assert checker.turns == len(schedule) and len(schedule) >= 6
    frame = requests.assign(session=schedule["session"].to_numpy(), turn=schedule["turn"].to_numpy())
    frame = frame.sort_values(["session", "turn"])
    later = frame["turn"].to_numpy() > 0
    gap = frame["intended_s"].to_numpy()[1:] - frame["done_s"].to_numpy()[:-1]
    assert np.all(gap[later[1:]] >= 0.4 - 0.005), gap[later[1:]]
    assert np.all(gap[later[1:]] < 0.4 + 0.25), gap[later[1:]]
    truth_ms = (0.05 + 19 * 0.004) * 1000.0
    latency = frame["latency_ms"].to_numpy()  # the answer's own time, never the think time before it
    assert ((latency >= 0.9 * truth_ms) & (latency < truth_ms + 200.0)).all(), latency.tolist()
