"""A capacity job keeps one run's lifecycle, with stand-ins for the server and the steps: a boot
that fails, a target that does not fit its protocol, Ctrl-C and SIGTERM are recorded as the abort,
the server is stopped and capacity.json written whatever happened (a stop step that raises is
said, not fatal; an error no run expects, or a document that cannot be written, is raised after
the teardown), and the exit code says which it was."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from rushhour.reference_server.launch import LaunchError
from rushhour.scenarios.capacity import runner
from rushhour.scenarios.capacity.conditions import HEALTHY, ConditionError, Healthy
from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.capacity.target import Target
from rushhour.scenarios.cli.capacity import build_job
from rushhour.scenarios.protocols.probe import ProbeError
from tests.scenarios.capacity.search_standins import KneeAt60

URL = "http://127.0.0.1:9"


class StandInTarget(Target):
    """A target that records when it is closed; `close_error` is what closing it raises (None: nothing)."""

    close_error: Exception | None = None
    closed: int = 0

    def close(self) -> None:
        type(self).closed += 1
        if self.close_error is not None:
            raise self.close_error


@pytest.fixture
def job(tmp_path: Path) -> CapacityJob:
    """The smoke scenario's job, searched from 20 to 100 req/s at 10% into `tmp_path/out`."""
    return build_job("scenarios/smoke.yaml", target_url=None, slos=(), faults="none", min_rps=20.0, max_rps=100.0,
                     precision=0.1, step_s=30.0, require_rps=None, out=tmp_path / "out", allow_remote=False,
                     seed=None)


@pytest.fixture
def target(monkeypatch: pytest.MonkeyPatch) -> type[StandInTarget]:
    """`open_target` gives a stand-in (never closed yet, closing it raises nothing); the steps are
    `KneeAt60`'s, the queue never waits."""
    monkeypatch.setattr(StandInTarget, "closed", 0)
    monkeypatch.setattr(StandInTarget, "close_error", None)
    monkeypatch.setattr(runner, "open_target", lambda _job, say: StandInTarget(URL, None, "stand-in"))
    monkeypatch.setattr(runner, "StepRunner", KneeAt60)
    monkeypatch.setattr(runner, "settle", lambda _url: 0.0)
    return StandInTarget


def _probe_raising(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    def probe(_job: CapacityJob, _url: str, *, say: object) -> bool:
        raise error

    monkeypatch.setattr(runner, "probe_capacity_target", probe)


def _run(job: CapacityJob) -> tuple[runner.CapacityOutcome, dict[str, Any], list[str]]:
    """The job run; its outcome, the capacity.json it wrote, and what it said."""
    said: list[str] = []
    outcome = runner.run_capacity(job, say=said.append)
    assert (job.out_dir / "capacity.html").is_file()
    return outcome, json.loads((job.out_dir / "capacity.json").read_text(encoding="utf-8")), said


def test_a_target_that_does_not_boot_is_the_abort_and_capacity_json_is_still_written(
        job: CapacityJob, monkeypatch: pytest.MonkeyPatch) -> None:
    def boot(_job: CapacityJob, say: object) -> Target:
        raise LaunchError("The reference server did not answer on port 8123 within 30 s.")

    monkeypatch.setattr(runner, "open_target", boot)
    outcome, written, _ = _run(job)
    assert outcome.exit_code == 3
    assert written["aborted"] == "The reference server did not answer on port 8123 within 30 s."
    assert written["conditions"] == [] and written["capacity_rps"] is None and written["target"] is None
    assert outcome.document["aborted"] == written["aborted"]


def test_a_target_that_does_not_fit_its_protocol_exits_2_once_it_is_stopped_and_the_document_written(
        job: CapacityJob, target: type[StandInTarget], monkeypatch: pytest.MonkeyPatch) -> None:
    _probe_raising(monkeypatch, ProbeError("POST /v1/translate answered 404."))
    outcome, written, _ = _run(job)
    assert outcome.exit_code == 2
    assert written["aborted"] == "the target does not fit its protocol: POST /v1/translate answered 404."
    assert written["target"] == "stand-in" and written["conditions"] == []
    assert target.closed == 1


class FaultNotHeld(Healthy):
    def hold(self) -> None:
        raise ConditionError("The experiment x.json did not hold its fault: quality-0 is still ready.")


def test_a_condition_that_cannot_be_held_is_the_abort_and_the_server_still_stops(
        job: CapacityJob, target: type[StandInTarget], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "probe_capacity_target", lambda _job, _url, *, say: False)
    monkeypatch.setattr(runner, "_condition", lambda _name, _job, _target: FaultNotHeld())
    outcome, written, _ = _run(job)
    assert outcome.exit_code == 3 and target.closed == 1
    assert written["aborted"] == "The experiment x.json did not hold its fault: quality-0 is still ready."
    assert written["conditions"] == []


def test_ctrl_c_before_the_search_is_an_interruption_with_exit_3(
        job: CapacityJob, target: type[StandInTarget], monkeypatch: pytest.MonkeyPatch) -> None:
    _probe_raising(monkeypatch, KeyboardInterrupt())
    outcome, written, _ = _run(job)
    assert (outcome.exit_code, written["aborted"]) == (3, "interrupted by the operator (Ctrl-C)")
    assert target.closed == 1


def test_sigterm_is_named_as_the_interruption_and_the_signal_handlers_are_given_back(
        job: CapacityJob, target: type[StandInTarget], monkeypatch: pytest.MonkeyPatch) -> None:
    def probe(_job: CapacityJob, _url: str, *, say: object) -> bool:
        os.kill(os.getpid(), signal.SIGTERM)  # the job's handler turns it into KeyboardInterrupt
        time.sleep(10.0)
        raise AssertionError("SIGTERM did not stop the job within 10 s.")

    monkeypatch.setattr(runner, "probe_capacity_target", probe)
    before = signal.getsignal(signal.SIGTERM)
    outcome, written, said = _run(job)
    assert (outcome.exit_code, written["aborted"]) == (3, "interrupted by SIGTERM")
    assert any(line.startswith("SIGTERM: stopping the search") for line in said)
    assert target.closed == 1 and signal.getsignal(signal.SIGTERM) == before


def test_a_server_that_fails_to_stop_is_said_and_the_search_is_still_written(
        job: CapacityJob, target: type[StandInTarget], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "probe_capacity_target", lambda _job, _url, *, say: False)
    target.close_error = RuntimeError("the server's process would not exit")
    outcome, written, said = _run(job)
    assert "warning: stop_server failed: the server's process would not exit" in said
    assert outcome.exit_code == 0 and written["aborted"] is None and target.closed == 1
    assert 54.0 <= written["capacity_rps"] <= 60.0  # KneeAt60 fails above 60 req/s; 10% precision
    assert [c["condition"] for c in written["conditions"]] == [HEALTHY]


def test_an_error_no_run_expects_is_raised_after_the_server_stopped_and_what_was_measured_written(
        job: CapacityJob, target: type[StandInTarget], monkeypatch: pytest.MonkeyPatch) -> None:
    _probe_raising(monkeypatch, ValueError("bad mix row 7"))
    with pytest.raises(ValueError, match="bad mix row 7"):
        runner.run_capacity(job, say=lambda _text: None)
    assert target.closed == 1
    assert json.loads((job.out_dir / "capacity.json").read_text(encoding="utf-8"))["conditions"] == []


def test_a_document_that_cannot_be_written_is_said_and_raised_once_the_server_stopped(
        job: CapacityJob, target: type[StandInTarget], monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_job: CapacityJob, _document: dict[str, Any]) -> None:
        raise ValueError('capacity.json\'s field "wall_s" is not a number.')

    monkeypatch.setattr(runner, "probe_capacity_target", lambda _job, _url, *, say: False)
    monkeypatch.setattr(runner, "write_document", refuse)
    said: list[str] = []
    with pytest.raises(ValueError, match='field "wall_s" is not a number'):
        runner.run_capacity(job, say=said.append)
    assert target.closed == 1 and any(line.startswith("warning: write_results failed") for line in said)
