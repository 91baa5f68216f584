"""The suite's own plugins: the first collection in a fresh environment, the profile's failure log."""

from __future__ import annotations

import py_compile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support import first_collect, rerun_reasons, suite_profile


def _collect() -> float:
    """Seconds the collection hook held this worker (PYTEST_XDIST_WORKER) before the collection."""
    began = time.monotonic()
    steps = first_collect.pytest_collection(None)  # type: ignore[arg-type]
    next(steps)
    waited = time.monotonic() - began
    with pytest.raises(StopIteration):
        next(steps)
    return waited


@pytest.fixture
def xdist_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", f"test-{time.time_ns()}")
    monkeypatch.setattr(first_collect.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(first_collect, "WAIT_S", 5.0)
    flag = first_collect._flag()
    assert flag is not None and flag.parent == tmp_path
    return flag


def test_first_collect_others_wait_for_the_first_worker_while_the_bytecode_is_cold(
        xdist_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(first_collect, "_cold", lambda: True)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    timer = threading.Timer(0.6, xdist_run.touch)
    timer.start()
    try:
        assert 0.5 <= _collect() < 3.0  # held until the first worker's flag appeared
    finally:
        timer.cancel()


def test_first_collect_first_worker_never_waits_and_leaves_its_flag(xdist_run: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(first_collect, "_cold", lambda: True)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert _collect() < 0.5 and xdist_run.exists()
    first_collect.pytest_unconfigure(SimpleNamespace())  # type: ignore[arg-type]
    assert not xdist_run.exists()


def test_first_collect_nobody_waits_once_the_bytecode_exists(xdist_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(first_collect, "_cold", lambda: False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert _collect() < 0.5 and not xdist_run.exists()


def test_first_collect_cold_means_the_marker_has_no_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "marker_pkg_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(first_collect, "MARKER", "marker_pkg_for_test")
    assert first_collect._cold()
    py_compile.compile(str(package / "__init__.py"), doraise=True)
    assert not first_collect._cold()


def test_suite_profile_keeps_each_failed_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_SUITE_PROFILE", str(tmp_path))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")

    def report(outcome: str, text: str) -> Any:
        return SimpleNamespace(nodeid="tests/test_x.py::test_y", when="call", passed=outcome == "passed",
                               skipped=outcome == "skipped", longreprtext=text)

    for outcome, text in (("passed", ""), ("rerun", "AssertionError: first try"), ("skipped", "why"),
                          ("failed", "AssertionError: second try")):
        suite_profile.pytest_runtest_logreport(report(outcome, text))
    relayed = report("failed", "AssertionError: relayed")  # the controller's copy of a worker's report
    relayed.node = "gw2"
    suite_profile.pytest_runtest_logreport(relayed)
    log = (tmp_path / "gw2.failures.txt").read_text()
    assert log.count("==== tests/test_x.py::test_y (call)") == 2
    assert "first try" in log and "second try" in log and "why" not in log and "relayed" not in log


def test_rerun_reasons_prints_why_each_rerun_test_failed_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rerun_reasons, "_REASONS", [])
    long_line = "x" * 5000 + "the end of a log"
    text = "\n".join([f"frame {i}" for i in range(40)] + [long_line, "E   AssertionError: first try"])
    for outcome in ("passed", "rerun", "failed"):
        rerun_reasons.pytest_runtest_logreport(SimpleNamespace(  # type: ignore[arg-type]
            nodeid="tests/test_x.py::test_y", when="call", outcome=outcome, longreprtext=text))
    lines: list[str] = []
    reporter = SimpleNamespace(section=lambda title: lines.append(f"== {title}"), write_line=lines.append)
    rerun_reasons.pytest_terminal_summary(reporter)  # type: ignore[arg-type]
    printed = "\n".join(lines)
    assert lines[:2] == ["== why tests were rerun", "--- tests/test_x.py::test_y (call)"]
    assert printed.count("AssertionError: first try") == 1 and "the end of a log" in printed
    assert "frame 39" in printed and "frame 10" not in printed  # only the last lines
    assert max(len(line) for line in printed.splitlines()) <= rerun_reasons.LINE_CHARS + 3


def test_rerun_reasons_prints_nothing_without_a_rerun(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rerun_reasons, "_REASONS", [])
    lines: list[str] = []
    reporter = SimpleNamespace(section=lines.append, write_line=lines.append)
    rerun_reasons.pytest_terminal_summary(reporter)  # type: ignore[arg-type]
    assert lines == []
