"""Fixtures shared by every suite: a reference server booted on loopback and always stopped."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import RunningServer, start_server
from kernel.processes import stop_process


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
