"""summary.json's streaming, goodput, target-metrics and soak sections are typed: what their
producers compute reaches the summary unchanged (keys, order, values) and reads back the same,
and a misspelt field or a value of the wrong type is refused naming its path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from rushhour.reports.build import summarise_run
from rushhour.reports.measures.facts import RunFacts
from rushhour.reports.rundata.results import RunData, load_run
from rushhour.reports.summary.aggregate import summarise
from rushhour.reports.summary.model import Summary
from tests.reports.helpers import requests_frame, write_run

MEASURES = ("streaming", "goodput", "target_metrics", "soak")
SLOS = [{"name": "ttft", "kind": "ttft", "percentile": 90, "threshold_ms": 500},
        {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 2000},
        {"name": "good", "kind": "goodput", "min_rps": 5.0},
        {"name": "creep", "kind": "drift", "metric": "server_memory", "max_slope": 1000.0}]
EVENTS = [{"type": "phase", "t_s": 0.0, "name": "base", "start_s": 0.0, "end_s": 30.0},
          {"type": "phase", "t_s": 30.0, "name": "peak", "start_s": 30.0, "end_s": 60.0},
          {"type": "target_metrics_error", "t_s": 30.0, "endpoint": "target metrics",
           "reason": "GET http://127.0.0.1:9/metrics failed: ConnectError", "errors": 1, "total": 1},
          {"type": "target_metrics", "t_s": 60.0, "url": "http://127.0.0.1:9/metrics", "samples": 59,
           "failed": 1, "dropped_series_samples": 0},
          {"type": "run_end", "t_s": 60.0, "duration_s": 60.0}]


def _measured_run(tmp_path: Path) -> RunData:
    """A minute of streamed answers in two phases, judged on per-request objectives and goodput,
    with the target's own metrics (its memory climbing) scraped once a second."""
    intended = np.arange(0.0, 60.0, 0.1)
    slow = (intended >= 30.0) & (np.arange(intended.size) % 5 == 0)
    ttft = np.where(slow, 900.0, 300.0)
    frame = requests_frame(intended, ttft + 39 * 40.0, ok=np.arange(intended.size) % 50 != 0, via="openai-chat",
                           phase=np.where(intended < 30.0, "base", "peak"))
    frame = frame.assign(ttft_ms=ttft, tpot_ms=40.0, itl_p50_ms=15.0, itl_p99_ms=60.0, itl_max_ms=80.0,
                         output_tokens=40.0)
    root = write_run(tmp_path / "run", frame, events=EVENTS, scenario={
        "traffic": {"model": "flat", "duration_s": 60.0}, "slos": SLOS,
        "target": {"url": "http://127.0.0.1:9", "metrics_url": "http://127.0.0.1:9/metrics",
                   "metrics": ["custom_gauge", "absent_metric"]}})
    seconds = np.arange(0.0, 60.0)
    pd.concat([pd.DataFrame({"t_s": seconds, "metric": "process_resident_memory_bytes", "labels": "{}",
                             "value": 1e8 + 1e5 * seconds}),
               pd.DataFrame({"t_s": seconds, "metric": "custom_gauge", "labels": '{"k": "v"}', "value": 2.0})]
              ).to_parquet(root / "target_metrics.parquet", index=False)
    return load_run(root)


def test_measured_sections_reach_the_summary_unchanged_and_read_back_the_same(tmp_path: Path) -> None:
    run = _measured_run(tmp_path)
    typed = summarise_run(run, RunFacts.of(run))
    said = summarise(run, RunFacts.of(run))
    parts = typed.as_dict()
    for name in MEASURES:  # same keys, order, values
        assert parts[name] is not None, name
        assert json.dumps(parts[name]) == json.dumps(said[name]), name
    assert typed.streaming is not None and typed.streaming.metrics["ttft_ms"].samples > 0
    assert typed.goodput is not None and [p.phase for p in typed.goodput.phases] == ["base", "peak"]
    assert typed.target_metrics is not None and [m.found for m in typed.target_metrics.named] == [True, False]
    assert typed.soak is not None and typed.soak.trends["server_memory"].trusted
    text = json.dumps(parts)  # summary.json read back validates to the same document
    assert json.dumps(Summary.model_validate(json.loads(text)).as_dict()) == text


def _changed(part: Any, path: list[str | int], value: Any) -> Any:
    """A copy of `part` with the value at `path` replaced (a new key when the last is absent)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        return [*part[:head], _changed(part[head], rest, value), *part[head + 1:]]
    return {**part, head: _changed(part.get(head, {}), rest, value)}


@pytest.mark.parametrize(("section", "path", "value", "named"), [
    ("streaming", ["metrics", "ttft_ms", "p99x"], 1.0, r"streaming\.metrics\.ttft_ms\.p99x"),
    ("streaming", ["output_tokens", "total"], "many", r"streaming\.output_tokens\.total"),
    ("goodput", ["phases", 1, "rsp"], 1.0, r"goodput\.phases\.1\.rsp"),
    ("goodput", ["objectives"], "ttft", r"goodput\.objectives"),
    ("target_metrics", ["named", 0, "foundd"], True, r"target_metrics\.named\.0\.foundd"),
    ("target_metrics", ["errors", 0, "t_s"], "noon", r"target_metrics\.errors\.0\.t_s"),
    ("soak", ["trends", "server_memory", "slope"], 1.0, r"soak\.trends\.server_memory\.slope"),
    ("soak", ["windows", 0, "latency_p99"], "slow", r"soak\.windows\.0\.latency_p99"),
])
def test_a_misspelt_or_mistyped_measure_is_refused_naming_its_path(tmp_path: Path, section: str,
                                                                   path: list[str | int], value: Any,
                                                                   named: str) -> None:
    parts = summarise_run(run := _measured_run(tmp_path), RunFacts.of(run)).as_dict()
    with pytest.raises(ValidationError, match=named):
        Summary.model_validate({**parts, section: _changed(parts[section], path, value)})
