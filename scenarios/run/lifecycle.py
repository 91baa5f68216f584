"""One run's lifecycle, written once: claim the folder, boot, probe, load and watch, tear down with
every step run, write the results, report; a drill, an A/B run, the overhead ladder and a capacity
job (`rushhour.scenarios.capacity.runner.CapacityRun`) plug their steps into it.

`RunLifecycle.run` holds the order. A boot or load that fails the way a run may fail (the server
did not start, the load could not be fired) is recorded as the run's abort reason and the run goes
on to its teardown (a run that must not go on says so with `aborting`); Ctrl-C is recorded as an
interruption the same way; any other error is raised again once the teardown and the results are
done. The teardown runs every stop step even when one before it raised
(`rushhour.scenarios.run.teardown.run_every_step`), and writing the results is always its last
step, so an aborted or interrupted run still leaves its data and its report.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Final, Generic, TextIO, TypeVar

from rushhour.kernel.contract import REQUEST_COLUMNS, SCENARIO_FILE, columns_of
from rushhour.reference_server.launch import LaunchError
from rushhour.scenarios.load.locust import LoadError
from rushhour.scenarios.run.resultsdir import ResultsDirError
from rushhour.scenarios.run.teardown import run_every_step

__all__ = ["ABORTING", "GENERATOR_COLUMNS", "SCHEDULE_GROUP_ROWS", "RunLifecycle", "claim_folder"]

SCHEDULE_GROUP_ROWS: Final = 50_000
"""Rows per row group of `schedule.parquet`: the schedule is drawn and written this many at a time,
and whoever reads it back (workers, the live fold, the merge) holds a few such groups at most."""
GENERATOR_COLUMNS: Final = list(columns_of(REQUEST_COLUMNS, "intended_s", "sent_s", "pool_wait_ms", "fired"))
"""The requests columns the generator's figures are computed from (not the whole table)."""
ABORTING: Final = (LaunchError, LoadError)
"""Errors that end a run's load early but still leave its results: recorded as the abort reason."""

Report = TypeVar("Report")


def claim_folder(folder: Path, scenario_text: str) -> None:
    """Make the (new or empty) folder this run's: `scenario.yaml` is created exclusively, first."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with (folder / SCENARIO_FILE).open("x", encoding="utf-8") as handle:
            handle.write(scenario_text)
    except FileExistsError as exc:
        raise ResultsDirError(f'The results folder "{folder}" already holds a run ({SCENARIO_FILE}); '
                              "a run never shares its folder.") from exc


class RunLifecycle(ABC, Generic[Report]):
    """The order of one run; a subclass supplies the steps (and the fields named below)."""

    aborting: ClassVar[tuple[type[Exception], ...]] = ABORTING
    """What a boot or load may raise that is recorded as the abort reason (others are raised)."""
    stream: TextIO
    abort_reason: str | None
    interrupted: bool

    def run(self) -> Report:
        """Claim, open, drive the load, tear down, write, report; `_close` runs whatever happens."""
        self._claim()
        self._open()
        try:
            self._drive()
            return self._report()
        finally:
            self._close()

    def _drive(self) -> None:
        try:
            self._boot_and_load()
        except self.aborting as exc:
            self._aborted(exc)
        except KeyboardInterrupt:
            self._interrupted()
        finally:
            self._tearing_down()
            run_every_step((*self._stop_steps(), self._write_results), self._say)

    @abstractmethod
    def _claim(self) -> None:
        """Make the results folder this run's and write the inputs (before anything starts)."""

    @abstractmethod
    def _boot_and_load(self) -> None:
        """Boot the targets, probe them, start the load and watch it until it is done."""

    @abstractmethod
    def _stop_steps(self) -> Sequence[Callable[[], object]]:
        """The teardown's stop steps in order; each runs even when one before it raised."""

    @abstractmethod
    def _write_results(self) -> None:
        """Write what was measured: the teardown's last step, run whatever happened before."""

    @abstractmethod
    def _report(self) -> Report:
        """Judge the written results (runs after the teardown)."""

    def _open(self) -> None:
        """Start what must live through the whole run (after the claim, before the load)."""

    def _tearing_down(self) -> None:
        """Called once just before the stop steps."""

    def _close(self) -> None:
        """Release what `_open` started; runs after the report, or when anything raised."""

    def _aborted(self, error: Exception) -> None:
        """Record one of `aborting` as the abort reason (its message)."""
        self.abort_reason = str(error)

    def _interrupted(self) -> None:
        self.interrupted = True

    def _say(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
