"""Say why a test was rerun: `make test` reruns a failed test (pytest-rerunfailures), and its summary
then names the test but not the failure the rerun hid, so a test that needs reruns now and then
could not be told from its log. These hooks keep each rerun's failure and print its last lines at
the end of the run, under "why tests were rerun". With pytest-xdist the reports reach the
controller, which prints them once.
"""

from __future__ import annotations

import pytest

__all__ = ["LINE_CHARS", "TAIL_LINES", "pytest_runtest_logreport", "pytest_terminal_summary", "rerun_reason"]

TAIL_LINES = 25
LINE_CHARS = 400  # an assertion that carries a whole log prints it on one line: its end is enough
_REASONS: list[tuple[str, str]] = []


def rerun_reason(report: pytest.TestReport, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of a failed attempt's report (where the assertion and its values are),
    each cut to its last LINE_CHARS characters."""
    tail = [line if len(line) <= LINE_CHARS else "..." + line[-LINE_CHARS:]
            for line in report.longreprtext.rstrip().splitlines()[-lines:]]
    return "\n".join(tail) if tail else "(the attempt left no failure text)"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome == "rerun":  # pytest-rerunfailures' own outcome
        _REASONS.append((f"{report.nodeid} ({report.when})", rerun_reason(report)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _REASONS:
        return
    terminalreporter.section("why tests were rerun")
    for name, reason in _REASONS:
        terminalreporter.write_line(f"--- {name}")
        terminalreporter.write_line(reason)
