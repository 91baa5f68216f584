"""End to end: a drill scrapes a target's Prometheus endpoint that stops answering halfway."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.scenarios.run.truth_metrics import TruthServer

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-b")  # a drill judged on its generator keeping the schedule: in a CPU lane
def test_drill_scrapes_target_metrics_and_survives_their_loss(tmp_path: Path, drill_process: list) -> None:
    truth = TruthServer()
    truth.running.labels(model_name="m").set(6)
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec["target"]["metrics_url"] = truth.url
    spec["target"]["metrics"] = ["vllm:generation_tokens_total"]
    spec["load"]["max_lag_p99_ms"] = 2000  # a busy shared machine must not make this run invalid
    scenario = tmp_path / "metrics.yaml"
    scenario.write_text(yaml.safe_dump(spec))
    out = tmp_path / "run"
    stopped = threading.Event()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.cli.main", "run", str(scenario), "--out", str(out),
                                 "--duration", "10s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        drill_process.append(proc)

        def stop_when_load_starts() -> None:  # the endpoint goes away once the run has scraped it a few times
            while not stopped.is_set() and not (out / "events.jsonl").exists():
                stopped.wait(0.2)
            stopped.wait(5.0)
            truth.stop()

        watcher = threading.Thread(target=stop_when_load_starts, daemon=True)
        watcher.start()
        output = proc.communicate(timeout=240)[0].decode()
    finally:
        stopped.set()
    assert proc.returncode in (0, 1), output
    frame = pd.read_parquet(out / "target_metrics.parquet")
    running = frame[frame["metric"] == "vllm:num_requests_running"]
    assert len(running) >= 2 and set(running["value"]) == {6.0}
    # on the run's clock: the first scrape goes out as the schedule starts (a moment before its t=0 is fine)
    assert running["t_s"].is_monotonic_increasing and -2.0 < running["t_s"].min() < 2.0
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    errors = [e for e in events if e["type"] == "target_metrics_error"]
    assert errors and all(e["endpoint"] == "target metrics" for e in errors)
    assert not any(e["type"] == "abort" for e in events)
    assert running["t_s"].max() < min(float(e["t_s"]) for e in errors)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["target_metrics"]["failed"] >= 1 and summary["verdict"] != "invalid"
    assert summary["target_metrics"]["recognised"] == ["vllm:generation_tokens_total", "vllm:num_requests_running"]
    html = (out / "report.html").read_text()
    assert 'id="chart-target_requests"' in html and 'id="chart-target_vllm:generation_tokens_total"' in html
