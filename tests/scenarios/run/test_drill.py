"""End to end: a short drill against the embedded reference server leaves every results file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rushhour.reports.rundata.results import REQUIRED_COLUMNS
from rushhour.scenarios.cli.run import prepare
from rushhour.scenarios.load.parts import REQUEST_COLUMNS, list_parts, merge_requests, read_parts
from rushhour.scenarios.run.scraper import METRIC_COLUMNS
from rushhour.scenarios.spec.plan import Overrides

RESULT_FILES = ("scenario.yaml", "schedule.parquet", "requests.parquet", "server_metrics.parquet",
                "events.jsonl", "summary.json", "report.html", "report.md", "junit.xml")


REPO = Path(__file__).resolve().parents[3]


def _drill(out: Path, *extra: str, scenario: str = "smoke") -> list[str]:
    return [sys.executable, "-m", "rushhour.scenarios.cli.main", "run", scenario, "--out", str(out), *extra]


def _smoke_with_room(tmp_path: Path) -> str:
    """The bundled smoke scenario with room for a busy machine in its generator lag limit.

    What is tested here is what a drill writes, not the generator's validity: 3 requests/s for
    10 s make 30 rows, so the lag P99 is their largest lag, and one late wake-up on two shared
    cores makes the run invalid (exit 3) at the bundled 50 ms."""
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text(encoding="utf-8"))
    spec["load"]["max_lag_p99_ms"] = 250
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return str(path)


def _events(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_runner_short_drill_writes_every_result(tmp_path: Path, drill_process: list) -> None:
    out = tmp_path / "drill"
    scenario = _smoke_with_room(tmp_path)
    proc = subprocess.Popen(_drill(out, "--duration", "10s", scenario=scenario),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    drill_process.append(proc)
    output = proc.communicate(timeout=240)[0].decode()
    assert proc.returncode in (0, 1), output
    assert f"report: {out / 'report.html'}" in output
    for name in RESULT_FILES:
        assert (out / name).is_file(), name
    schedule = pd.read_parquet(out / "schedule.parquet")
    requests = pd.read_parquet(out / "requests.parquet")
    assert list(requests.columns) == list(REQUEST_COLUMNS) and set(REQUIRED_COLUMNS) <= set(requests.columns)
    assert len(requests) == len(schedule) > 0
    assert requests["ok"].mean() > 0.5 and set(requests.loc[requests.ok, "model"]) <= {"quality", "fast", "cache"}
    # drawn and written a chunk at a time, merged a chunk at a time: the rows of the whole-table paths
    plan = prepare(scenario, Overrides(duration="10s"), allow_remote=False)
    pd.testing.assert_frame_equal(schedule, plan.draw.whole())
    parts = read_parts(list_parts(out / "load" / "parts"))
    pd.testing.assert_frame_equal(requests, merge_requests(schedule, parts))
    metrics = pd.read_parquet(out / "server_metrics.parquet")
    assert list(metrics.columns) == list(METRIC_COLUMNS) and len(metrics) >= 10
    kinds = [e["type"] for e in _events(out)]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end" and "generator" in kinds and "phase" in kinds
    assert "abort" not in kinds
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] in ("pass", "fail") and summary["requests"]["scheduled"] == len(schedule)
    batching = summary["environment"]["batching"]  # the embedded server's defaults, as each pool ran them
    assert "quality: continuous, chunked prefill 128 tokens/step" in batching
    assert "fast: continuous, chunked prefill 128 tokens/step" in batching
    assert f"<td>batching</td><td>{batching}</td>" in (out / "report.html").read_text()


@pytest.mark.slow
def test_runner_ctrl_c_stops_cleanly_and_still_reports(tmp_path: Path, drill_process: list) -> None:
    out = tmp_path / "drill"
    proc = subprocess.Popen(_drill(out, "--duration", "60s"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    drill_process.append(proc)
    give_up = time.monotonic() + 180
    while not (out / "events.jsonl").exists() and time.monotonic() < give_up and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(3.0)
    os.kill(proc.pid, signal.SIGINT)
    output = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == 3, output
    for name in RESULT_FILES:
        assert (out / name).is_file(), name
    events = _events(out)
    assert any(e["type"] == "abort" and "Ctrl-C" in e["reason"] for e in events)
    assert events[-1]["type"] == "run_end" and events[-1]["interrupted"] is True
    assert events[-1]["duration_s"] < 30  # stopped long before the 60 s schedule ended
    requests = pd.read_parquet(out / "requests.parquet")
    assert len(requests) == len(pd.read_parquet(out / "schedule.parquet"))
    assert (requests["status"] == 0).any() and requests["ok"].any()
