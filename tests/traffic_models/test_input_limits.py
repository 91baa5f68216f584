"""Bad input refused, not crashed on: trace sizes within the schedule's types, texts within a cap,
logs nested deeper than any reader follows."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rushhour.traffic_models import TrafficModelError, generate_schedule, load_traffic_model
from rushhour.traffic_models.limits import MAX_REQUEST_CHARS
from rushhour.traffic_models.text import prompt_text, text_for


def test_trace_size_past_int32_is_refused_naming_column_row_and_cap(tmp_path: Path,
                                                                     write_model: Callable[..., Path]) -> None:
    (tmp_path / "big.csv").write_text("timestamp,chars\n0,100\n1,3000000000\n2,5\n")
    with pytest.raises(TrafficModelError, match=r"big\.csv: column chars row 2 asks for 3e\+09 characters, "
                                                r"past the 8,000,000 rushhour sends in one request"):
        generate_schedule(load_traffic_model(write_model("replay: {path: big.csv}\n")), seed=0)


def test_trace_row_of_1e14_tokens_is_refused_before_any_text_is_built(tmp_path: Path,
                                                                       write_model: Callable[..., Path]) -> None:
    (tmp_path / "huge.jsonl").write_text('{"timestamp": 0, "input_length": 10, "output_length": 1}\n'
                                         '{"timestamp": 5, "input_length": 1e14, "output_length": 1}\n')
    with pytest.raises(TrafficModelError, match=r"column tokens row 2 asks for 4e\+14 characters"):
        generate_schedule(load_traffic_model(write_model("replay: {path: huge.jsonl, format: mooncake}\n")), seed=0)


def test_trace_output_length_past_the_cap_is_refused(tmp_path: Path, write_model: Callable[..., Path]) -> None:
    (tmp_path / "out.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n0,10,1\n1,10,3000000000\n")
    with pytest.raises(TrafficModelError, match=r"column GeneratedTokens row 2 asks for 3e\+09 output tokens"):
        generate_schedule(load_traffic_model(write_model("replay: {path: out.csv, format: azure-llm}\n")), seed=0)


def test_schedule_sizes_never_wrap_negative_at_the_cap(tmp_path: Path, write_model: Callable[..., Path]) -> None:
    (tmp_path / "edge.csv").write_text(f"timestamp,chars\n0,{MAX_REQUEST_CHARS}\n1,1\n")
    schedule = generate_schedule(load_traffic_model(write_model("replay: {path: edge.csv}\n")), seed=0)
    assert int(schedule["chars"].max()) == MAX_REQUEST_CHARS and int(schedule["chars"].min()) >= 1


def test_mix_length_past_the_cap_is_refused_by_field(write_model: Callable[..., Path]) -> None:
    text = ("name: m\ncurve: {points: [[\"00:00\", 1], [\"00:01\", 1]]}\nmix:\n  kinds:\n    short:\n"
            "      fraction: 1\n      chars: {median: 100, max: 100000000000000}\n")
    with pytest.raises(TrafficModelError, match=r"chars\.max"):
        load_traffic_model(write_model(text))


@pytest.mark.parametrize("build", [lambda n: text_for(1, n), lambda n: prompt_text("blocks:1:512:1 2 3", 1, n)])
def test_load_generator_never_builds_a_text_past_the_cap(build: Callable[[int], str]) -> None:
    began = time.monotonic()
    with pytest.raises(ValueError, match="8,000,000"):
        build(10**14)
    assert time.monotonic() - began < 1.0


def test_jsonl_trace_nested_5000_levels_is_named_by_line(tmp_path: Path, write_model: Callable[..., Path]) -> None:
    (tmp_path / "deep.jsonl").write_text('{"timestamp": 0}\n' + '{"a":' * 5000 + "1" + "}" * 5000 + "\n")
    with pytest.raises(TrafficModelError, match=r"deep\.jsonl: line 2 cannot be read: it is nested too deeply"):
        load_traffic_model(write_model("replay: {path: deep.jsonl, format: jsonl}\n"))

