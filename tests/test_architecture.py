"""The structure ARCHITECTURE.md describes: layers enforced by import-linter, small modules, and the
code checked by ruff (lint, import order) and mypy (types), both configured in pyproject.toml."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.namespace import lay_namespace

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("scenarios", "reports", "experiments", "reference_server", "traffic_models", "kernel", "benchmarks")
MAX_MODULE_LINES = 400


@pytest.mark.slow
@pytest.mark.architecture
def test_layers_contract_is_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    if not lint_imports.exists():
        pytest.fail(f"import-linter is not installed beside {sys.executable}; `make test` installs it.")
    env = {**os.environ, "PYTHONPATH": str(lay_namespace())}  # grimp reads the packages through the links
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    # the layers, the layers inside scenarios and inside reports, no pandas in the kernel or a Locust process
    assert "5 kept, 0 broken" in done.stdout


def test_no_module_is_over_400_lines() -> None:
    too_long = {str(path.relative_to(REPO)): n for package in PACKAGES for path in (REPO / package).rglob("*.py")
                if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not too_long, f"split these modules (over {MAX_MODULE_LINES} lines): {too_long}"


def _tool(name: str) -> Path:
    tool = Path(sys.executable).parent / name
    if not tool.exists():
        pytest.fail(f"{name} is not installed beside {sys.executable}; `make test` (or `make test-fast`) installs the test extra.")
    return tool


@pytest.mark.slow
@pytest.mark.architecture
def test_ruff_finds_nothing() -> None:
    done = subprocess.run([str(_tool("ruff")), "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.architecture
def test_mypy_finds_nothing() -> None:
    # one cache per user, not per clone: mypy re-checks a module whose source hash changed, so a fresh
    # clone reuses what is unchanged instead of a cold run (about half a minute of one core)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rushhour" / "mypy"
    lay_namespace()
    env = {**os.environ, "MYPY_CACHE_DIR": os.environ.get("MYPY_CACHE_DIR") or str(cache)}
    done = subprocess.run([str(_tool("mypy"))], cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


BARE_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?:kernel|reports|scenarios|experiments|traffic_models|reference_server)\b",
                         re.MULTILINE)


def test_every_import_names_the_rushhour_namespace() -> None:
    # run from the repository's root, `import reports` would find the folder and work by accident; installed,
    # only `rushhour.reports` exists
    bare = [str(path.relative_to(REPO)) for folder in (*PACKAGES, "tests") for path in (REPO / folder).rglob("*.py")
            if BARE_IMPORT.search(path.read_text(encoding="utf-8"))]
    assert not bare, f"these modules import a folder by its bare name instead of rushhour.<folder>: {bare}"
