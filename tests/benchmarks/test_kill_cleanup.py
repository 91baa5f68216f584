"""The kill clean-up benchmark's drill file and its count of processes still alive."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil

from benchmarks.kill_cleanup import HOLD, _alive, _scenario
from rushhour.scenarios.spec.model import load_scenario


def test_kill_cleanup_scenario_is_a_valid_drill_that_holds_a_partition(tmp_path: Path) -> None:
    scenario = load_scenario(_scenario(tmp_path, {"url": "http://127.0.0.1:9"}))
    [fault] = scenario.chaos
    assert Path(fault.experiment).name == "network-partition.json"
    assert fault.hold == HOLD == "120s"
    assert fault.env["RUSHHOUR_SLO_MAX_ERROR_RATE"] == "1"


def test_kill_cleanup_counts_a_running_process_and_not_one_that_ended() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        family = [psutil.Process(sleeper.pid)]
        assert _alive(family) == 1
    finally:
        sleeper.kill()
        sleeper.wait(timeout=10)
    assert _alive(family) == 0
