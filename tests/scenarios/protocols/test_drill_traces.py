"""`rushhour run` replays a production trace and runs conversations against an OpenAI-compatible
streaming service: what the service received, and the latencies of the results folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from rushhour.scenarios.cli.run import run
from rushhour.scenarios.protocols import make_protocol
from rushhour.scenarios.spec.target import TargetProtocol
from tests.support.targets import StreamPlan, serve_target

BURSTGPT = """\
Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
0,ChatGPT,120,18,138,Conversation log
0.4,ChatGPT,300,9,309,Conversation log
0.9,GPT-4,60,25,85,API log
"""
FAST = StreamPlan(tokens=64, first_s=0.05, every_s=0.004, stall_at=None)


def _drill(tmp_path: Path, url: str, model: str, duration: str) -> tuple[int, str, Path]:
    (tmp_path / "model.yaml").write_text(model, encoding="utf-8")
    scenario = {"name": "trace", "traffic": {"model": str(tmp_path / "model.yaml"), "duration": duration},
                "target": {"url": url, "protocol": "openai-chat", "model": "truth", "ignore_eos": True},
                # what these drills test is the trace's requests, not the generator's validity: its lag
                # limit leaves a busy machine's late wake-ups room, as the other drills on two cores do
                "load": {"request_timeout_s": 10, "max_lag_p99_ms": 250}}
    path = tmp_path / "trace.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(run, [str(path), "--out", str(tmp_path / "results")])
    return result.exit_code, result.output, tmp_path / "results"


@pytest.mark.timeout(180)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_run_replays_a_burstgpt_trace_with_logged_lengths(tmp_path: Path) -> None:
    (tmp_path / "b.csv").write_text(BURSTGPT, encoding="utf-8")
    with serve_target() as (url, state):
        state.plan = FAST
        code, output, out = _drill(tmp_path, url, "replay: {path: b.csv, format: burstgpt, chars_per_token: 4}\n", "2s")
        sent = [b for b in state.bodies if b.get("max_tokens") in (18, 9, 25)]
    assert code == 0, output
    assert sorted((b["max_tokens"], len(b["messages"][0]["content"])) for b in sent) == [(9, 1200), (18, 480), (25, 240)]
    assert all(b["ignore_eos"] is True and len(b["messages"]) == 1 for b in sent)
    requests = pd.read_parquet(out / "requests.parquet")
    assert requests["ok"].all() and requests["max_tokens"].tolist() == [18, 9, 25]
    assert np.allclose(requests["intended_s"], [0.0, 0.4, 0.9])
    assert (requests["output_tokens"] == requests["max_tokens"]).all()


@pytest.mark.timeout(180)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_run_sends_conversations_turn_after_answer(tmp_path: Path) -> None:
    model = ("duration: 3\nbase_rps: 1\nsessions: {turns_min: 2, turns_max: 2, think: 0.3s, "
             "think_distribution: constant}\nmix: {kinds: {short: {fraction: 1, chars: {median: 60, max: 100}, "
             "max_tokens: {median: 10, sigma: 0, max: 10}}}}\n")
    with serve_target() as (url, state):
        state.plan = FAST
        code, output, out = _drill(tmp_path, url, model, "3s")
        chats = [b for b in state.bodies if b.get("max_tokens") == 10]
    assert code == 0, output
    requests = pd.read_parquet(out / "requests.parquet")
    schedule = pd.read_parquet(out / "schedule.parquet")
    assert requests["ok"].all() and len(requests) >= 4
    assert sorted(len(b["messages"]) for b in chats) == sorted(1 + 2 * schedule["turn"].to_numpy())
    firsts = {b["messages"][0]["content"] for b in chats if len(b["messages"]) == 1}
    assert all(b["messages"][0]["content"] in firsts for b in chats)
    later = (schedule["turn"] > 0).to_numpy()
    assert (requests["intended_s"].to_numpy()[later] > schedule["offset_s"].to_numpy()[later]).all()
    assert (requests["latency_ms"] < 1000).all(), requests["latency_ms"].tolist()


def test_ignore_eos_is_refused_for_a_protocol_without_it() -> None:
    with pytest.raises(ValidationError, match='ignore_eos is for openai-chat; protocol "kserve-v2"'):
        TargetProtocol(protocol="kserve-v2", model="m", ignore_eos=True)


def test_openai_chat_sends_a_row_s_messages_as_they_are_and_keeps_the_answer() -> None:
    protocol = make_protocol({"protocol": "openai-chat", "model": "m", "ignore_eos": True})
    messages = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}]
    body = json.loads(protocol.build({"text": "q1 a1 q2", "max_tokens": 5, "messages": messages}).body or b"")
    assert body["messages"] == messages and body["ignore_eos"] is True and body["max_tokens"] == 5
    parser = protocol.stream_parser()
    for k in range(3):
        parser.feed(b"data: " + json.dumps({"choices": [{"delta": {"content": f"w{k} "}}]}).encode() + b"\n\n", 1.0 + k)
    parser.feed(b'data: {"choices": [{"delta": {}, "finish_reason": "length"}]}\n\ndata: [DONE]\n\n', 4.0)
    assert parser.outcome(200).text == "w0 w1 w2 "
    whole = make_protocol({"protocol": "openai-chat", "stream": False})
    answer = whole.parse(200, b'{"choices": [{"message": {"role": "assistant", "content": "whole answer"}}]}')
    assert answer.status == 200 and answer.text == "whole answer"
