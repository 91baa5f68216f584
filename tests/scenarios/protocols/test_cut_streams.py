"""A stream that stops before it says it is complete is a failed request, "stream cut"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.run import run
from rushhour.scenarios.protocols import make_protocol
from tests.support.targets import StreamPlan, serve_target


def _tokens(parser: object, count: int, *, finish: bool = False) -> None:
    for k in range(count):
        choice = {"delta": {"content": f"t{k}"}, "finish_reason": "stop" if finish and k == count - 1 else None}
        parser.feed(b"data: " + json.dumps({"model": "m", "choices": [choice]}).encode() + b"\n\n", 1.0 + k / 100)  # type: ignore[attr-defined]


def test_cut_stream_without_done_or_finish_reason_fails() -> None:
    parser = make_protocol({"protocol": "openai-chat"}).stream_parser()
    _tokens(parser, 2)
    outcome = parser.outcome(200)
    assert outcome.status == 0 and outcome.error.startswith("stream cut") and "[DONE]" in outcome.error


def test_cut_stream_a_finish_reason_alone_completes_the_answer() -> None:
    parser = make_protocol({"protocol": "openai-chat"}).stream_parser()
    _tokens(parser, 3, finish=True)
    assert parser.outcome(200).status == 200


def test_cut_stream_done_without_any_token_fails() -> None:
    parser = make_protocol({"protocol": "openai-chat"}).stream_parser()
    parser.feed(b'data: {"choices": [], "usage": {"completion_tokens": 0}}\n\ndata: [DONE]\n\n', 1.0)
    outcome = parser.outcome(200)
    assert outcome.status == 0 and "without a token" in outcome.error


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_cut_stream_every_fifth_answer_cut_makes_four_in_five_ok(tmp_path: Path) -> None:
    slos = [{"name": "availability", "kind": "availability", "objective": 0.95},
            {"name": "tpot", "kind": "tpot", "percentile": 90, "threshold_ms": 200}]
    with serve_target() as (url, state):
        state.plan = StreamPlan(tokens=10, first_s=0.05, every_s=0.01, stall_at=None)
        state.cut_every = 5
        scenario = {"name": "cut", "traffic": {"model": "constant:5", "duration": "4s"}, "slos": slos,
                    "target": {"url": url, "protocol": "openai-chat", "model": "m", "max_tokens": 10},
                    "load": {"request_timeout_s": 10, "max_lag_p99_ms": 2000}}
        path = tmp_path / "cut.yaml"
        path.write_text(yaml.safe_dump(scenario))
        result = CliRunner().invoke(run, [str(path), "--out", str(tmp_path / "results")])
    summary = json.loads((tmp_path / "results" / "summary.json").read_text())
    requests = summary["requests"]
    assert state.cut == requests["scheduled"] // 5 >= 3, (state.cut, requests)  # the probe's answer is never cut
    assert requests["ok"] == requests["scheduled"] - state.cut  # four in five, give or take the count's rounding
    assert requests["ok"] / requests["scheduled"] == pytest.approx(0.8, abs=0.05)
    availability = next(slo for slo in summary["slos"] if slo["name"] == "availability")
    assert not availability["met"] and summary["verdict"] == "fail" and result.exit_code == 1, result.output
    # the cut answers' two tokens are not in the successful answers' token figures
    assert summary["streaming"]["metrics"]["tpot_ms"]["samples"] == requests["ok"]
