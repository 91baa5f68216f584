"""The Makefile keeps a user's install apart from the tests': `make install` (and `make drill`, `make
bench`) installs the package with one ONNX Runtime build and nothing else, while `make test-deps`
(hence `make test`) and `make test-fast` install it with the test extra. Read from make's dry runs
(`make -n`: the commands printed, none run) in a copy of the Makefile whose environment is a
temporary folder, so the checkout's own .venv is never looked at."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EDITABLE = re.compile(r"pip install -e '\.\[([^\]]*)\]'")


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The Makefile and the files its stamps depend on, in a folder of their own."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed here")
    for name in ("Makefile", "pyproject.toml", "setup.py"):
        shutil.copy2(REPO / name, tmp_path / name)
    return tmp_path


def _extras(folder: Path, *args: str) -> list[set[str]]:
    """The extras of every editable install of rushhour that `make -n ARGS` would run (one set each)."""
    done = subprocess.run(["make", "-n", *args, f"VENV={folder / 'venv'}", "PYTHON=python3"], cwd=folder,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [set(match.group(1).split(",")) for line in done.stdout.splitlines() if (match := EDITABLE.search(line))]


@pytest.mark.parametrize("target", ["install", "drill", "bench"])
def test_what_a_user_runs_installs_one_onnx_runtime_build_and_not_the_test_extra(copy: Path, target: str) -> None:
    assert _extras(copy, target) == [{"cpu"}]
    assert _extras(copy, target, "RUSHHOUR_GPU=1") == [{"gpu"}]


def test_make_install_gpu_installs_the_gpu_build_alone(copy: Path) -> None:
    assert _extras(copy, "install-gpu") == [{"gpu"}]


@pytest.mark.parametrize("target", ["test", "test-deps", "test-fast"])
def test_what_the_tests_run_installs_the_test_extra_in_the_same_single_install(copy: Path, target: str) -> None:
    assert _extras(copy, target) == [{"cpu", "test"}]
    assert _extras(copy, target, "RUSHHOUR_GPU=1") == [{"gpu", "test"}]


def test_a_users_install_does_not_count_as_the_tests_but_the_tests_install_counts_as_a_users(copy: Path) -> None:
    venv = copy / "venv"
    venv.mkdir()
    (venv / ".rushhour-installed").touch()  # `make install` done, after the project files were written
    assert _extras(copy, "install") == []
    assert _extras(copy, "test-deps") == [{"cpu", "test"}]
    (venv / ".rushhour-installed-test").touch()  # `make test-deps` done: both stamps
    assert _extras(copy, "install") == [] and _extras(copy, "test-deps") == []
