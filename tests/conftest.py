"""Fixtures shared by every suite: a reference server booted on loopback and always stopped."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernel.processes import stop_process
from tests.support.server import RunningServer, start_server

SERVER_FIXTURES = frozenset({"server_factory", "shared_server", "drill_process"})


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order and group the tests for a parallel run (make test: pytest-xdist, --dist loadgroup).

    A test that boots a server is slow even if nobody marked it. The tests of a module that share
    one server (shared_server) stay on one worker, so that server boots once, not once per worker.
    Slow tests go first, so the long ones do not start last and finish alone.
    """
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & SERVER_FIXTURES and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if "shared_server" in fixtures and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(f"shared-server-{item.nodeid.split('::')[0]}"))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own RUSHHOUR_STATE_DIR (admin token file, cached capacity figures).

    Tests run side by side (pytest-xdist), and ~/.rushhour is the user's: no test reads a figure
    another test, or the user, left there, and none writes into it.
    """
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(state))
    # a drill's harness-overhead check would re-measure in every fresh state folder; its own tests turn it on
    monkeypatch.setenv("RUSHHOUR_NO_OVERHEAD_CHECK", "1")
    return state


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., RunningServer]]:
    """Start servers with a config override; all are stopped when the test ends."""
    started: list[RunningServer] = []

    def factory(config: dict[str, Any] | None = None, **kwargs: Any) -> RunningServer:
        server = start_server(tmp_path / f"server{len(started)}", config, **kwargs)
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One small cluster for a whole test module (tests must leave it healthy)."""
    server = start_server(tmp_path_factory.mktemp("shared-server"))
    yield server
    server.stop()


@pytest.fixture
def write_model(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write YAML text (a traffic model, a scenario) to tmp_path/<name> and return the path."""

    def write(text: str, name: str = "model.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def drill_process() -> Iterator[list[subprocess.Popen[bytes]]]:
    """`rushhour run` subprocesses a test started; SIGTERM (then SIGKILL) any still running."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        stop_process(proc, grace_s=30)
