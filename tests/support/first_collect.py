"""In a fresh environment the first worker collects the suite alone; the others follow.

Python keeps the bytecode of what it imports (`make test` lets it write), but a freshly installed
environment has none. Collecting the suite imports most of the libraries, and when every
pytest-xdist worker starts at once, each compiles the same modules again: about 13 s of CPU
apiece on two cores, three times over for nothing. So, while a marker library (pandas) has no
bytecode yet, the first worker ("gw0") collects first and the others wait for it (at most
`WAIT_S`), then read what it compiled. Once the bytecode exists nobody waits. Order only: every
worker still collects the whole suite itself, as pytest-xdist requires.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

FIRST = "gw0"
MARKER = "pandas"
WAIT_S = 120.0
POLL_S = 0.2


def _cold() -> bool:
    """Whether the marker library's bytecode is missing (a freshly installed environment)."""
    spec = importlib.util.find_spec(MARKER)
    if spec is None or spec.origin is None:
        return False
    return not Path(importlib.util.cache_from_source(spec.origin)).exists()


def _flag() -> Path | None:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return Path(tempfile.gettempdir()) / f"rushhour-collected-{run}" if run else None


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    worker, flag = os.environ.get("PYTEST_XDIST_WORKER"), _flag()
    if worker is None or flag is None:
        yield
        return
    if worker != FIRST and _cold():
        deadline = time.monotonic() + WAIT_S
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(POLL_S)
    try:
        yield
    finally:
        if worker == FIRST:
            flag.touch()


def pytest_unconfigure(config: pytest.Config) -> None:
    flag = _flag()
    if os.environ.get("PYTEST_XDIST_WORKER") == FIRST and flag is not None:
        flag.unlink(missing_ok=True)
