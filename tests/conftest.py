"""Fixtures shared by every suite: a reference server booted on loopback and always stopped."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rushhour.kernel.processes import stop_process
from tests.support.first_collect import pytest_collection as pytest_collection
from tests.support.first_collect import pytest_unconfigure as pytest_unconfigure
from tests.support.rerun_reasons import pytest_runtest_logreport as pytest_runtest_logreport
from tests.support.rerun_reasons import pytest_terminal_summary as pytest_terminal_summary
from tests.support.server import RunningServer, start_server
from tests.support.xdist_groups import pytest_collection_finish as pytest_collection_finish

SERVER_FIXTURES = frozenset({"server_factory", "shared_server", "drill_process"})
LANES = ("cpu-a", "cpu-b", "cpu-c")  # make test's CPU lanes, each one worker's work from the start
# Outside the lanes, the tests that take half a minute or more (measured with --durations) start
# first, so that none of them starts near the end and finishes alone; order only, never a result.
# The checkers (mypy starts cold in a fresh clone: about half a minute of one core) go at once, on the
# worker the lanes leave free, while the lanes' first servers boot.
LONG_FIRST = ("tests/test_architecture.py", "tests/scenarios/run/", "tests/scenarios/cli/test_ab.py",
              "tests/scenarios/spec/test_variants.py", "tests/experiments/test_local_live.py",
              "tests/reference_server/test_gpu_packaging.py", "tests/docs/test_site.py",
              "tests/scenarios/capacity/test_interrupt.py")
# Within its lane, a search judged against a real clock on small steps goes after the suite's first
# minute, its busiest (every worker booting servers, the benchmark and overload tests saturating both
# cores): there the TTFT search's answers came slow together so often that even its lowest rate could
# not be shown met (0 of 218 answers late, too few independent-equivalent ones); a drill across
# network namespaces, three processes a host, was starved there too. Order only.
LANE_LAST = ("tests/scenarios/capacity/test_ground_truth.py::test_ground_truth_search_on_ttft",
             "tests/scenarios/distributed/test_namespaces.py", "tests/benchmarks/test_gpu_check.py",
             "tests/scenarios/load/test_streaming_truth.py")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order and group the tests for a parallel run (make test: pytest-xdist, --dist loadgroup).

    A test that boots a server is slow even if nobody marked it. The tests of a module that share
    a module-scoped fixture (shared_server, a module's own server, a run read by several tests)
    stay on one worker, so that fixture is built once, not once per worker.
    The CPU lanes go first (pytest-xdist hands out work in this order, with
    --no-loadscope-reorder), so each starts at once on a worker of its own; then the long tests
    (LONG_FIRST), the other slow ones, and the rest.
    """
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & SERVER_FIXTURES and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if _uses_a_module_fixture(item) and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(f"module-{item.nodeid.split('::')[0]}"))
    items.sort(key=_order)


def _order(item: pytest.Item) -> tuple[int, int, int]:
    group = item.get_closest_marker("xdist_group")
    lane = str(group.args[0]) if group is not None and group.args else ""
    if lane in LANES:
        return 0, LANES.index(lane), int(item.nodeid.startswith(LANE_LAST))
    if item.get_closest_marker("slow") is None:
        return 3, 0, 0
    path = item.nodeid.split("::")[0]
    long = [i for i, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)]
    return (1, long[0], 0) if long else (2, 0, 0)


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


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
