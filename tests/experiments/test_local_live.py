"""Every local action and probe, and `chaos run` of an experiment, against a real loopback server.

The server is the bundled reference server, booted once for this module on a free port of
127.0.0.1 and stopped (SIGTERM, then SIGKILL if it lingers) by the fixture's finaliser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rushhour.experiments.local import actions, probes
from rushhour.reference_server.launch import ServerProcess
from rushhour.scenarios.run.chaos.timeline import ChaosTimeline
from rushhour.scenarios.spec.chaos import plan_faults
from rushhour.scenarios.spec.model import ChaosEntry

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "live-test-token"

Kw = dict[str, Any]


def wait_until(condition: Callable[[], bool], what: str, limit_s: float = 60.0) -> None:
    """Poll until `condition` holds; the limit only guards against a hung server."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"Gave up waiting for {what} after {limit_s} s.")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kw]:
    state = tmp_path_factory.mktemp("state")
    process = ServerProcess(log_path=state / "server.log", token=TOKEN, cwd=ROOT, env={"RUSHHOUR_STATE_DIR": str(state)})
    try:
        process.start(ready_wait_s=120)
        kw: dict[str, Any] = {"configuration": {"rushhour_url": process.url}, "secrets": {"admin_token": TOKEN}}
        wait_until(lambda: probes.all_nodes_ready(**kw), "every node to be ready", 120)
        yield kw
    finally:
        process.stop(grace_s=30)


@pytest.fixture
def kw(server: Kw) -> Iterator[Kw]:
    """Each test starts from, and leaves, a healed cluster with every node ready."""
    yield server
    actions.reset(**server)
    wait_until(lambda: probes.all_nodes_ready(**server), "every node to be ready again")


def _faults(kw: Kw, node: str) -> list[dict[str, Any]]:
    return list(_node(kw, node)["faults"])


def _recorder(events: list[dict[str, Any]], started: threading.Event) -> Callable[[dict[str, Any]], None]:
    """An event callback that keeps each event and says the first one has come."""
    def record(event: dict[str, Any]) -> None:
        events.append(event)
        started.set()
    return record


@pytest.mark.slow
def test_live_node_probes_see_the_booted_cluster(kw: Kw) -> None:
    states = probes.node_states(**kw)
    assert {"quality-0", "quality-1", "fast-0"} <= set(states)
    assert probes.ready_nodes(pool="quality", **kw) == ["quality-0", "quality-1"]
    assert probes.all_nodes_ready(**kw) and probes.server_ready(**kw)
    assert probes.ready_nodes_at_least(pool="quality", n=2, **kw)
    assert probes.translation_served(mode="quality", allow_degraded=False, **kw)


def _node(kw: Kw, node: str) -> dict[str, Any]:
    status = httpx.get(kw["configuration"]["rushhour_url"] + "/v1/status").json()
    return next(n for n in status["nodes"] if n["id"] == node)


@pytest.mark.slow
def test_live_kill_and_recover_a_node(kw: Kw) -> None:
    before = _node(kw, "quality-1")["pid"]
    assert actions.kill_node(node_id="quality-1", **kw)["node"] == "quality-1"
    # the gateway supervises its nodes like a kubelet: the dead process is noticed and replaced
    wait_until(lambda: _node(kw, "quality-1")["pid"] != before, "quality-1 to be replaced")
    actions.recover_pool(pool="quality", **kw)
    wait_until(lambda: probes.ready_nodes_at_least(pool="quality", n=2, **kw), "quality-1 back")


@pytest.mark.slow
def test_live_cold_restart_of_node_and_pool(kw: Kw) -> None:
    assert actions.restart_node(node_id="fast-0", warm=False, **kw)["warm"] is False
    wait_until(lambda: probes.all_nodes_ready(pool="fast", **kw), "fast-0 back")
    assert actions.restart_pool(pool="quality", warm=False, **kw)["nodes"] == ["quality-0", "quality-1"]
    wait_until(lambda: probes.all_nodes_ready(pool="quality", **kw), "the quality pool back")
    assert probes.translation_served(mode="quality", **kw)


@pytest.mark.slow
def test_live_network_faults_show_in_status_and_heal(kw: Kw) -> None:
    actions.partition_node(node_id="quality-0", mode="reset", ttl_s=30, **kw)
    assert [f["kind"] for f in _faults(kw, "quality-0")] in (["reset"], ["partition"])
    actions.heal_node(node_id="quality-0", **kw)
    assert _faults(kw, "quality-0") == []
    actions.add_latency(node_id="quality-1", latency_ms=50, jitter_ms=5, ttl_s=30, **kw)
    actions.inject_errors(node_id="fast-0", error_rate=0.5, ttl_s=30, **kw)
    assert [f["kind"] for f in _faults(kw, "quality-1")] == ["latency"]
    assert [f["kind"] for f in _faults(kw, "fast-0")] == ["errors"]
    actions.partition_pool(pool="quality", mode="blackhole", ttl_s=30, **kw)
    actions.heal_pool(pool="quality", **kw)
    assert _faults(kw, "quality-0") == [] and _faults(kw, "quality-1") == []


@pytest.mark.slow
def test_live_whole_pool_loss_still_serves_auto_requests(kw: Kw) -> None:
    assert actions.kill_pool(pool="quality", **kw)["nodes"] == ["quality-0", "quality-1"]
    assert probes.translation_served(mode="auto", allow_degraded=True, **kw)
    actions.recover_pool(pool="quality", **kw)


@pytest.mark.slow
def test_live_scale_flush_and_reset(kw: Kw) -> None:
    actions.scale_pool(pool="fast", nodes=2, **kw)
    wait_until(lambda: probes.ready_nodes_at_least(pool="fast", n=2, **kw), "fast-1 ready")
    actions.scale_pool(pool="fast", nodes=1, **kw)
    wait_until(lambda: len(probes.node_states(pool="fast", **kw)) == 1, "fast back to one node")
    assert "response" in actions.flush_cache(**kw)
    assert "response" in actions.reset(**kw)


@pytest.mark.slow
def test_live_slo_probes_measure_traffic_in_the_window(kw: Kw) -> None:
    url = kw["configuration"]["rushhour_url"]
    done = threading.Event()

    def traffic() -> None:
        with httpx.Client(timeout=10) as client:
            while not done.is_set():
                body = {"text": f"hello {time.monotonic()}", "source_lang": "en", "target_lang": "de"}
                client.post(f"{url}/v1/translate", json=body)

    sender = threading.Thread(target=traffic)
    sender.start()
    try:
        window = probes.slo_window(window_s=2.0, **kw)
    finally:
        done.set()
        sender.join()
    assert window["requests"] > 0 and window["p99_ms"] > 0.0
    assert window["error_rate"] == 0.0
    assert probes.slo_met(p99_ms=60_000, max_error_rate=0.0, window_s=0.5, **kw)


def _chaos_env(kw: Kw) -> dict[str, str]:
    return {
        **os.environ,
        "RUSHHOUR_URL": kw["configuration"]["rushhour_url"],
        "RUSHHOUR_ADMIN_TOKEN": TOKEN,
        "RUSHHOUR_FAULT_HOLD_S": "2",
        "RUSHHOUR_SLO_WINDOW_S": "0.5",
    }


@pytest.mark.slow
def test_live_chaos_run_of_gpu_node_loss(kw: Kw, tmp_path: Path) -> None:
    journal = tmp_path / "journal.json"
    command = [
        str(Path(sys.executable).parent / "chaos"), "--no-version-check", "--no-log-file", "run",
        "--journal-path", str(journal), str(ROOT / "experiments" / "gpu-node-loss.json"),
    ]
    result = subprocess.run(command, env=_chaos_env(kw), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(journal.read_text())
    assert record["status"] == "completed" and record["deviated"] is False
    assert record["run"][0]["output"]["node"] == "quality-0"
    assert [r["status"] for r in record["rollbacks"]] == ["succeeded", "succeeded"]


@pytest.mark.slow
def test_live_timeline_stop_rolls_back_a_running_experiment(kw: Kw, tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    started = threading.Event()
    timeline = ChaosTimeline(
        plan_faults([ChaosEntry(at="00:00", experiment="network-partition.json")], start_clock_s=0.0, time_scale=1.0,
                    duration_s=600.0, search_dirs=(ROOT / "experiments",), source="test"),
        time_scale=1.0, start_clock_s=0.0, out_dir=tmp_path, url=kw["configuration"]["rushhour_url"],
        token=TOKEN, on_event=_recorder(events, started), env={"RUSHHOUR_FAULT_HOLD_S": "300", "RUSHHOUR_SLO_WINDOW_S": "0.5"},
    )
    timeline.start(time.monotonic())
    assert started.wait(30)
    wait_until(lambda: _faults(kw, "quality-0") != [], "the partition to be injected")
    timeline.stop()
    assert [e["type"] for e in events] == ["fault_start", "fault_end"]
    assert timeline.outcomes[0]["status"] == "interrupted"
    assert timeline.outcomes[0]["rolled_back"] is True
    assert _faults(kw, "quality-0") == []
