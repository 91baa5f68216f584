"""Production trace formats: a handful of lines written here, parsed to the millisecond."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.traffic_models import TrafficModelError, generate_schedule, load_traffic_model
from rushhour.traffic_models.text import prompt_text

MOONCAKE = """\
{"timestamp": 27482, "input_length": 1200, "output_length": 10, "hash_ids": [46, 47, 48]}
{"timestamp": 27495, "input_length": 1100, "output_length": 20, "hash_ids": [46, 47, 49]}
{"timestamp": 28001, "input_length": 300, "output_length": 7, "hash_ids": [50]}
"""
BURSTGPT = """\
Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45.25,ChatGPT,1087,0,1087,Conversation log
118.003,GPT-4,417,217,634,API log
"""
AZURE_2024 = """\
TIMESTAMP,ContextTokens,GeneratedTokens
2024-05-10 00:00:00.009930+00:00,4808,10
2024-05-10 00:00:00.014894+00:00,3180,8
2024-05-10 00:00:01.264000+00:00,110,27
"""


def _model(tmp_path: Path, name: str, text: str, fmt: str, chars_per_token: float = 1.0):
    (tmp_path / name).write_text(text, encoding="utf-8")
    spec = tmp_path / "model.yaml"
    spec.write_text(f"replay: {{path: {name}, format: {fmt}, chars_per_token: {chars_per_token}}}\n")
    return load_traffic_model(spec)


def _texts(frame: pd.DataFrame) -> list[str]:
    return [prompt_text(p, int(i), int(c)) for p, i, c in zip(frame["prompt"], frame["text_id"], frame["chars"])]


def test_mooncake_offsets_lengths_and_shared_blocks(tmp_path: Path) -> None:
    frame = generate_schedule(_model(tmp_path, "t.jsonl", MOONCAKE, "mooncake"), seed=1)
    assert np.allclose(frame["offset_s"], [0.0, 0.013, 0.519], atol=1e-9)
    assert frame["chars"].tolist() == [1200, 1100, 300] and frame["max_tokens"].tolist() == [10, 20, 7]
    texts = _texts(frame)
    assert [len(t) for t in texts] == [1200, 1100, 300]
    assert texts[0][:1024] == texts[1][:1024]  # hash ids 46 and 47: two shared 512-token blocks
    assert len(os.path.commonprefix(texts[:2])) < 1024 + 20  # block 48 against 49: different text
    assert texts[0][:1] != texts[2][:1] and len(os.path.commonprefix([texts[0], texts[2]])) == 0


def test_mooncake_blocks_scale_with_chars_per_token_and_follow_the_seed(tmp_path: Path) -> None:
    model = _model(tmp_path, "t.jsonl", MOONCAKE, "mooncake", chars_per_token=2.0)
    one, again, other = (_texts(generate_schedule(model, seed=s)) for s in (1, 1, 2))
    assert [len(t) for t in one] == [2400, 2200, 600]
    assert one[0][:2048] == one[1][:2048] and one[0][2048:2060] != one[1][2048:2060]
    assert one == again and one[0] != other[0]


def test_burstgpt_seconds_and_token_counts(tmp_path: Path) -> None:
    frame = generate_schedule(_model(tmp_path, "b.csv", BURSTGPT, "burstgpt", 4.0), seed=1)
    assert np.allclose(frame["offset_s"], [0.0, 40.25, 113.003], atol=1e-9)
    assert frame["chars"].tolist() == [1888, 4348, 1668] and frame["max_tokens"].tolist() == [18, 0, 217]
    assert (frame["prompt"] == "raw").all()
    texts = _texts(frame)
    assert [len(t) for t in texts] == [1888, 4348, 1668] and len({t[:30] for t in texts}) == 3


def test_azure_2024_release_columns(tmp_path: Path) -> None:
    frame = generate_schedule(_model(tmp_path, "a.csv", AZURE_2024, "azure-llm", 1.0), seed=1)
    assert np.allclose(frame["offset_s"], [0.0, 0.004964, 1.25407], atol=1e-6)
    assert frame["chars"].tolist() == [4808, 3180, 110] and frame["max_tokens"].tolist() == [10, 8, 27]


def test_a_trace_replays_at_a_time_and_rate_scale_within_a_window(tmp_path: Path) -> None:
    model = _model(tmp_path, "b.csv", BURSTGPT, "burstgpt")
    frame = generate_schedule(model, seed=1, time_scale=10, rate_scale=10, start_clock_s=30.0)
    assert np.allclose(frame["offset_s"], [1.025, 8.3003], atol=1e-9)
    assert frame["max_tokens"].tolist() == [0, 217]


def test_a_trace_without_the_format_s_columns_is_named(tmp_path: Path) -> None:
    with pytest.raises(TrafficModelError, match="Response tokens"):
        _model(tmp_path, "b.csv", "Timestamp,Request tokens\n1,2\n", "burstgpt")
    with pytest.raises(TrafficModelError, match="hash_ids"):
        _model(tmp_path, "t.jsonl", '{"timestamp": 1, "input_length": 2, "output_length": 3, "hash_ids": "x"}\n',
               "mooncake")
