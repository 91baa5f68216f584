"""benchmarks.gate_nights_machine: a night's busy cores split into this benchmark's and everything else's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.gate_nights_machine import TreeWatch, machine_busy_s, split_cores, tree_cpu, wait_for_quiet

SPIN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def test_machine_busy_s_adds_every_busy_field_and_leaves_idle_out(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    ticks = os.sysconf("SC_CLK_TCK")
    stat.write_text(f"cpu  {ticks} {2 * ticks} {ticks} {50 * ticks} {9 * ticks} 0 {ticks} 0 0 0\ncpu0 1 1 1 1\n")
    assert machine_busy_s(stat) == pytest.approx(5.0)


def test_tree_watch_counts_a_grandchild_that_ends_unwaited() -> None:
    # the grandchild spins 0.4 s of CPU, then its parent exits without waiting for it and it is killed
    code = ("import subprocess, sys, time\n"
            f"child = subprocess.Popen([sys.executable, '-c', {SPIN.format(s=0.4)!r} + 'time.sleep(30)'])\n"
            "print(child.pid, flush=True)\ntime.sleep(30)\n")
    watch = TreeWatch(every_s=0.2).start()
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    grandchild = int(parent.stdout.readline()) if parent.stdout else 0
    try:
        deadline = time.monotonic() + 20.0
        while tree_cpu().get(grandchild, 0.0) < 0.4 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        os.kill(grandchild, 9)
        parent.kill()
        parent.wait()
    assert grandchild not in tree_cpu()
    assert watch.stop() >= 0.4


def test_split_cores_splits_the_machine_s_busy_time_into_ours_and_the_rest() -> None:
    assert split_cores(2.0, 3.0, 1.0) == {"busy_cores": 1.5, "our_cores": 0.5, "other_cores": 1.0}
    assert split_cores(2.0, 1.0, 1.5)["other_cores"] == 0.0


def test_wait_for_quiet_returns_at_once_on_a_quiet_machine_and_gives_up_at_its_bound() -> None:
    assert wait_for_quiet(max_other_cores=1000.0, max_wait_s=60.0, window_s=0.1).quiet
    never = wait_for_quiet(max_other_cores=-1.0, max_wait_s=0.0, window_s=0.1)
    assert not never.quiet and never.waited_s < 5.0
