"""End to end: an interrupted drill keeps its teardown through more signals and audits what is left."""

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

from tests.support.server import REPO
from tests.support.traffic import short_texts


def _leaky_experiment(tmp_path: Path) -> Path:
    """Partitions a node for 10 minutes and has no rollback: exactly what the audit must catch."""
    experiment = {
        "version": "1.0.0", "title": "a fault nobody heals", "description": "no rollbacks on purpose",
        "configuration": {"rushhour_url": {"type": "env", "key": "RUSHHOUR_URL"}},
        "secrets": {"rushhour": {"admin_token": {"type": "env", "key": "RUSHHOUR_ADMIN_TOKEN"}}},
        "method": [{"type": "action", "name": "partition-and-leave", "provider": {
            "type": "python", "module": "rushhour.experiments.local.actions", "func": "partition_node",
            "secrets": ["rushhour"], "arguments": {"pool": "fast", "ttl_s": 600}}}],
        "rollbacks": [],
    }
    path = tmp_path / "leaky.json"
    path.write_text(json.dumps(experiment))
    return path


@pytest.mark.slow
def test_interrupted_drill_ignores_more_signals_in_teardown_and_audits_a_leftover_fault(
        tmp_path: Path, drill_process: list) -> None:
    spec = {
        "name": "leaky", "traffic": {"model": str(short_texts(tmp_path, 3)), "duration": "60s", "seed": 2},
        "target": {"embedded": {"nodes": 1, "max_batch_size": 4}}, "load": {"processes": 1},
        "slos": [{"name": "availability", "kind": "availability", "objective": 0.5}],
        "chaos": [{"at": "00:00:01", "experiment": str(_leaky_experiment(tmp_path))}],
    }
    scenario = tmp_path / "leaky.yaml"
    scenario.write_text(yaml.safe_dump(spec))
    out = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.cli.main", "run", str(scenario), "--out", str(out)],
                            cwd=REPO, env={**os.environ, "RUSHHOUR_AUDIT_WAIT_S": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    drill_process.append(proc)
    events = out / "events.jsonl"
    give_up = time.monotonic() + 180
    while time.monotonic() < give_up and proc.poll() is None:
        if events.exists() and '"fault_end"' in events.read_text():
            break
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(0.5)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a stuck operator and a supervisor
        os.kill(proc.pid, sig)
        time.sleep(0.2)
    output = proc.communicate(timeout=180)[0].decode()
    assert proc.returncode == 3, output
    assert "already stopping" in output
    assert len(pd.read_parquet(out / "requests.parquet")) == len(pd.read_parquet(out / "schedule.parquet"))
    audit = json.loads((out / "leak_audit.json").read_text())
    assert audit["clean"] is False and "target" in audit["checked"] and "processes" in audit["checked"]
    kinds = {(f["kind"], f["target"]) for f in audit["findings"]}
    assert ("fault", "fast-0") in kinds, audit
    assert not any(f["kind"] == "process" for f in audit["findings"]), audit
    assert len(audit["actions"]) == 1 and "/admin/reset after the audit: healed" in audit["actions"][0]
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["type"] for e in logged][-1] == "run_end"
    assert any(e["type"] == "leak_audit" and e["clean"] is False for e in logged)
    assert "warning: leak audit found fast-0" in output
    assert (out / "summary.json").is_file() and (out / "report.html").is_file()
