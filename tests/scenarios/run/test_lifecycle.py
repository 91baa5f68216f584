"""A run's lifecycle keeps its order: every stop step runs and the results are written whatever the
load did, an abort or Ctrl-C is recorded, any other error is raised once the results are written."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rushhour.reference_server.launch import LaunchError
from rushhour.scenarios.load.locust import LoadError
from rushhour.scenarios.run.lifecycle import RunLifecycle, claim_folder
from rushhour.scenarios.run.resultsdir import ResultsDirError


@dataclass
class FakeRun(RunLifecycle[list[str]]):
    """Records each step it is asked for; `load_error` is what its load raises (None: it finishes)."""

    load_error: BaseException | None = None
    failing_step: str | None = None
    stream: io.StringIO = field(default_factory=io.StringIO)
    abort_reason: str | None = None
    interrupted: bool = False
    steps: list[str] = field(default_factory=list)

    def _step(self, name: str) -> None:
        self.steps.append(name)
        if name == self.failing_step:
            raise RuntimeError(f"{name} broke")

    def _claim(self) -> None:
        self._step("claim")

    def _open(self) -> None:
        self._step("open")

    def _boot_and_load(self) -> None:
        self._step("load")
        if self.load_error is not None:
            raise self.load_error

    def _tearing_down(self) -> None:
        self._step("tearing_down")

    def _stop_steps(self) -> tuple[Callable[[], object], ...]:
        return (self._stop_load, self._stop_server)

    def _stop_load(self) -> None:
        self._step("stop_load")

    def _stop_server(self) -> None:
        self._step("stop_server")

    def _write_results(self) -> None:
        self._step("write")

    def _report(self) -> list[str]:
        self._step("report")
        return list(self.steps)

    def _close(self) -> None:
        self.steps.append("close")


ORDER = ["claim", "open", "load", "tearing_down", "stop_load", "stop_server", "write"]


def test_a_finished_run_goes_through_every_step_in_order_and_reports() -> None:
    run = FakeRun()
    assert run.run() == [*ORDER, "report"]
    assert run.steps == [*ORDER, "report", "close"]
    assert run.abort_reason is None and not run.interrupted
    assert run.stream.getvalue() == ""


@pytest.mark.parametrize("error", [LaunchError("the server did not start on port 8123"),
                                   LoadError("locust exited with code 1")])
def test_a_failed_load_is_the_abort_reason_and_the_results_are_still_written(error: Exception) -> None:
    run = FakeRun(load_error=error)
    assert run.run() == [*ORDER, "report"]
    assert run.abort_reason == str(error)
    assert not run.interrupted


def test_ctrl_c_during_the_load_is_an_interruption_and_the_run_still_reports() -> None:
    run = FakeRun(load_error=KeyboardInterrupt())
    assert run.run() == [*ORDER, "report"]
    assert run.interrupted and run.abort_reason is None


@pytest.mark.parametrize("failing", ["stop_load", "stop_server"])
def test_a_stop_step_that_raises_is_said_and_the_next_steps_still_run(failing: str) -> None:
    run = FakeRun(failing_step=failing)
    assert run.run() == [*ORDER, "report"]
    assert run.stream.getvalue() == f"warning: {failing} failed: {failing} broke\n"


def test_an_unexpected_load_error_is_raised_after_the_teardown_and_the_results() -> None:
    run = FakeRun(load_error=ValueError("bad row 7"))
    with pytest.raises(ValueError, match="bad row 7"):
        run.run()
    assert run.steps == [*ORDER, "close"]
    assert run.abort_reason is None


def test_the_first_error_is_raised_even_when_a_teardown_step_fails_after_it() -> None:
    run = FakeRun(load_error=ValueError("bad row 7"), failing_step="stop_server")
    with pytest.raises(ValueError, match="bad row 7"):
        run.run()
    assert run.steps == [*ORDER, "close"]
    assert "stop_server broke" in run.stream.getvalue()


def test_a_claim_that_fails_starts_nothing() -> None:
    run = FakeRun(failing_step="claim")
    with pytest.raises(RuntimeError, match="claim broke"):
        run.run()
    assert run.steps == ["claim"]


def test_a_folder_holding_a_run_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    claim_folder(folder, "name: first\n")
    assert (folder / "scenario.yaml").read_text(encoding="utf-8") == "name: first\n"
    with pytest.raises(ResultsDirError, match=f'"{folder}" already holds a run'):
        claim_folder(folder, "name: second\n")
    assert (folder / "scenario.yaml").read_text(encoding="utf-8") == "name: first\n"


@dataclass
class StrictRun(FakeRun):
    """A run that must not go on after a failed load (as the overhead ladder)."""

    aborting = ()


def test_a_run_with_no_aborting_errors_raises_a_failed_load_after_the_teardown() -> None:
    run = StrictRun(load_error=LoadError("locust exited with code 1"))
    with pytest.raises(LoadError, match="code 1"):
        run.run()
    assert run.steps == [*ORDER, "close"]
    assert run.abort_reason is None
