"""Teardown reaches its last step: a step that raises is said and named, the next ones still run."""

from __future__ import annotations

from rushhour.scenarios.run.teardown import run_every_step


def test_every_step_runs_after_one_fails_and_the_failure_is_said() -> None:
    ran: list[str] = []
    said: list[str] = []

    def _stop_load() -> None:
        ran.append("load")

    def _stop_server() -> None:
        ran.append("server")
        raise RuntimeError("port 8000 did not close")

    def _write_results() -> None:
        ran.append("results")

    failed = run_every_step((_stop_load, _stop_server, _write_results), said.append)
    assert ran == ["load", "server", "results"]
    assert failed == ["stop_server"]
    assert said == ["warning: stop_server failed: port 8000 did not close"]


def test_a_clean_teardown_says_nothing() -> None:
    said: list[str] = []
    assert run_every_step((lambda: None, lambda: None), said.append) == []
    assert said == []
