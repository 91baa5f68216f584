"""make test's parallel run keeps each xdist_group on one worker (tests/support/xdist_groups.py):
a small suite with two groups across two modules, run by pytest-xdist with --dist loadgroup."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFTEST = "from tests.support.xdist_groups import pytest_collection_finish as pytest_collection_finish\n"
MODULE = """\
import os
import time
from pathlib import Path

import pytest


@pytest.mark.xdist_group("{group}")
@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    time.sleep(0.05)
    Path(os.environ["WORKERS_SEEN"], f"{group}-{{__name__}}-{{i}}").write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


@pytest.mark.slow
def test_an_xdist_group_runs_on_one_worker_across_modules(tmp_path: Path) -> None:
    suite, seen = tmp_path / "suite", tmp_path / "seen"
    suite.mkdir()
    seen.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "conftest.py").write_text(CONFTEST)
    for name, group in (("test_one.py", "lane-a"), ("test_two.py", "lane-a"), ("test_three.py", "lane-b")):
        (suite / name).write_text(MODULE.format(group=group))
    env = {**os.environ, "WORKERS_SEEN": str(seen), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "3", "--dist", "loadgroup", "-p", "no:cacheprovider"],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    workers: dict[str, set[str]] = {}
    for path in seen.iterdir():
        workers.setdefault(path.name.split("-test_")[0], set()).add(path.read_text())
    assert sorted(workers) == ["lane-a", "lane-b"] and len(list(seen.iterdir())) == 12
    assert all(len(ran_on) == 1 for ran_on in workers.values()), workers
