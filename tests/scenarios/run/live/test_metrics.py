"""The harness's metrics endpoint and terminal view over a LiveState with known rows."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from rushhour.scenarios.cli.run import prepare
from rushhour.scenarios.run.live.metrics import LiveMetricsError, MetricsServer, sd_targets
from rushhour.scenarios.run.live.state import LiveState
from rushhour.scenarios.run.live.view import render_view
from rushhour.scenarios.spec.plan import Overrides
from tests.scenarios.run.live.test_fold import _parts


@pytest.fixture()
def state(tmp_path: Path) -> LiveState:
    plan = prepare("scenarios/smoke.yaml", Overrides(), allow_remote=False)
    plan.schedule.to_parquet(tmp_path / "schedule.parquet", index=False)  # as the drill writes it before the load
    live = LiveState(plan, tmp_path)
    live.begin(time.time() - 4.0, "http://127.0.0.1:8123")
    parts = _parts([0, 1, 2], [0.1, 0.2, 0.3], [200, 503, 200])
    parts["intended_s"] = plan.schedule["offset_s"].to_numpy()[:3]
    live.tick(parts, cpu_ratio=0.25)
    return live


def _samples(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value if not s.labels.get("le") else out.get(s.name, 0.0)
    return out


@pytest.mark.slow
def test_metrics_endpoint_serves_counters_faults_and_sd(state: LiveState, tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text(json.dumps({"type": "fault_start", "name": "x", "t_s": 1.0}) + "\n")
    state.faults["x"] = None
    server = MetricsServer(state, port=0)
    try:
        text = httpx.get(server.url, timeout=5.0).text
        sd = httpx.get(f"http://127.0.0.1:{server.port}/sd", timeout=5.0).json()
    finally:
        server.close()
    samples = _samples(text)
    assert samples["rushhour_drill_sent_total"] == 3 and samples["rushhour_drill_shed_total"] == 1
    assert samples["rushhour_drill_latency_seconds_count"] == 3
    assert samples["rushhour_drill_fault_active"] == 1.0  # read from events.jsonl at scrape time
    assert samples["rushhour_drill_generator_cpu_ratio"] == 0.25
    assert samples["rushhour_drill_slo_bad_total"] >= 1
    assert [g["labels"]["job"] for g in sd] == ["rushhour-harness", "rushhour-server"]
    if shutil.which("promtool"):
        done = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=60, check=False)
        assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done


def test_metrics_port_taken_is_a_sentence(state: LiveState) -> None:
    first = MetricsServer(state, port=0)
    try:
        with pytest.raises(LiveMetricsError, match=f"cannot listen on 127.0.0.1:{first.port}"):
            MetricsServer(state, port=first.port)
    finally:
        first.close()


def test_sd_targets_point_at_the_service_metrics_path() -> None:
    groups = sd_targets("127.0.0.1:9464", "https://svc.example:8443/api")
    assert groups[1] == {"targets": ["svc.example:8443"], "labels": {
        "job": "rushhour-server", "__scheme__": "https", "__metrics_path__": "/api/metrics"}}
    assert len(sd_targets("127.0.0.1:9464", None)) == 1


def test_live_view_shows_rate_p99_against_slo_and_faults(state: LiveState) -> None:
    state.faults["gpu-node-loss"] = 1.0
    text = "\n".join(render_view(state))
    assert "rushhour drill smoke" in text and "s left" in text
    assert "<= 10,000 ms" in text and "ok" in text
    assert "gpu-node-loss HELD" in text
    assert "\x1b" not in text
