"""benchmarks.gate_nights_machine: a night's busy cores split into this benchmark's and everything else's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.gate_nights_machine import MachineSample, machine_busy_s, tree_cpu_s, wait_for_quiet

SPIN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def test_machine_busy_s_adds_every_busy_field_and_leaves_idle_out(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    ticks = os.sysconf("SC_CLK_TCK")
    stat.write_text(f"cpu  {ticks} {2 * ticks} {ticks} {50 * ticks} {9 * ticks} 0 {ticks} 0 0 0\ncpu0 1 1 1 1\n")
    assert machine_busy_s(stat) == pytest.approx(5.0)


def test_tree_cpu_s_counts_a_running_child_and_keeps_it_once_reaped() -> None:
    before = tree_cpu_s()
    child = subprocess.Popen([sys.executable, "-c", SPIN.format(s=0.4) + "time.sleep(30)"])
    try:
        deadline = time.monotonic() + 20.0
        while tree_cpu_s() - before < 0.4 and time.monotonic() < deadline:
            time.sleep(0.05)
        running = tree_cpu_s() - before
        assert running >= 0.4
    finally:
        child.kill()
        child.wait()
    assert running <= tree_cpu_s() - before < running + 0.2


def test_cores_since_splits_the_machine_s_busy_time_into_ours_and_the_rest() -> None:
    cores = MachineSample(10.0, 100.0, 40.0).cores_since(MachineSample(8.0, 97.0, 39.0))
    assert cores == {"busy_cores": 1.5, "our_cores": 0.5, "other_cores": 1.0}


def test_wait_for_quiet_returns_at_once_on_a_quiet_machine_and_gives_up_at_its_bound() -> None:
    assert wait_for_quiet(max_other_cores=1000.0, max_wait_s=60.0, window_s=0.1).quiet
    never = wait_for_quiet(max_other_cores=-1.0, max_wait_s=0.0, window_s=0.1)
    assert not never.quiet and never.waited_s < 5.0
