"""A worker of another version is refused with the reason, and the drill stops before the load.
On loopback: the refusal needs no separate hosts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.cli.worker import worker_argv
from rushhour.scenarios.generator.worker_relay import ENV_REMOTE_WORK, STATUS_FILE
from rushhour.scenarios.load.locust import proxy_free_env

HERE = Path(__file__).resolve().parent
SCENARIO = """\
name: refusal
traffic: {{model: "constant:5", duration: 2s, seed: 1}}
target: {{url: "http://127.0.0.1:{port}"}}
slos:
  - {{name: availability, kind: availability, objective: 0.5}}
"""


@pytest.mark.slow
def test_refusal_of_another_version_stops_the_drill_with_the_reason(tmp_path: Path) -> None:
    master_port = free_port()
    (tmp_path / "scenario.yaml").write_text(SCENARIO.format(port=free_port()), encoding="utf-8")
    argv = worker_argv("127.0.0.1", master_port)
    argv[argv.index("-f") + 1] = str(HERE / "old_worker_locustfile.py")
    env = {**proxy_free_env(), ENV_REMOTE_WORK: str(tmp_path)}
    old = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        master = subprocess.run(
            [sys.executable, "-m", "rushhour.scenarios.cli.main", "run", str(tmp_path / "scenario.yaml"), "--workers", "1",
             "--master-bind", f"127.0.0.1:{master_port}", "--no-probe", "--out", str(tmp_path / "out")],
            capture_output=True, text=True, timeout=180, check=False)
        assert old.wait(timeout=30) is not None
    finally:
        stop_process(old, grace_s=5)
    assert master.returncode == 3, master.stdout + master.stderr
    assert 'runs "rushhour 0.0.0, locust 0.0" but the master runs "rushhour ' in master.stdout + master.stderr
    assert "install the same version on every host" in (tmp_path / STATUS_FILE).read_text()
