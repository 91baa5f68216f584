"""A pytest plugin that records where the suite's time and CPU go, test by test.

Loaded with `-p tests.support.suite_profile` and RUSHHOUR_SUITE_PROFILE=DIR: each xdist worker
appends one JSON line per test to DIR/<worker>.jsonl (its id, xdist group, worker, wall start
and end, and the CPU of the worker and of the children it reaped: servers and drills a test's
fixtures started and stopped). `python -m benchmarks.suite_profile DIR` sums them by lane and
by file. Each failed attempt's report goes to DIR/<worker>.failures.txt, reruns included.
Without the variable the plugin does nothing.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    folder = os.environ.get("RUSHHOUR_SUITE_PROFILE")
    if not folder:
        yield
        return
    began, (own0, kids0) = time.time(), _cpu()
    yield
    ended, (own1, kids1) = time.time(), _cpu()
    group = item.get_closest_marker("xdist_group")
    row = {"id": item.nodeid, "group": str(group.args[0]) if group is not None and group.args else "",
           "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "start": began, "end": ended,
           "cpu_s": round(own1 - own0, 3), "children_cpu_s": round(kids1 - kids0, 3)}
    path = Path(folder) / f"{row['worker']}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failed attempt's report, kept in DIR/<worker>.failures.txt: a test that passed on a rerun
    is listed by -rR without the reason it failed first."""
    folder = os.environ.get("RUSHHOUR_SUITE_PROFILE")
    if not folder or report.passed or report.skipped or hasattr(report, "node"):
        return  # (a report with `node` is a worker's, seen again by pytest-xdist's controller)
    path = Path(folder) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.failures.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(f"==== {report.nodeid} ({report.when}) at {time.time():.0f}\n{report.longreprtext[-6000:]}\n")
