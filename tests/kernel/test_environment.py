"""Every RUSHHOUR_* variable the project names (code, tests, benchmarks, manifests, CI files, the
Makefile, docs) is declared once (rushhour.kernel.environment), and the reference page is that
declaration."""

from __future__ import annotations

import os
import re
from pathlib import Path

from rushhour.kernel.environment import VARIABLES, page

REPO = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bRUSHHOUR_[A-Z0-9_]*[A-Z0-9]\b")
SKIPPED_FOLDERS = {".git", ".venv", ".hypothesis", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".rushhour",
                   "__pycache__", "build", "results", "site", "node_modules"}
"""Tools' caches, installs and run outputs: not the project's own files."""
TEXT_SUFFIXES = {".py", ".json", ".yaml", ".yml", ".toml", ".md", ".sh", ".cfg", ".ini", ".txt", ".html", ".j2"}
THE_DECLARATION = {Path("kernel/environment.py"), Path("docs/reference/environment.md"),
                   Path("tests/kernel/test_environment.py")}
"""The declaration, its page and this test name every variable (or a planted one): they prove nothing."""


def named_in(root: Path) -> dict[str, set[str]]:
    """Every RUSHHOUR_* name in the project's text files below `root`, with the files naming it."""
    named: dict[str, set[str]] = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if d not in SKIPPED_FOLDERS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder) / name
            relative = path.relative_to(root)
            if relative in THE_DECLARATION or (path.suffix not in TEXT_SUFFIXES and name not in {"Makefile", "run"}):
                continue
            for found in NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
                named.setdefault(found, set()).add(str(relative))
    return named


def test_every_variable_the_project_names_is_declared() -> None:
    declared = {v.name for v in VARIABLES}
    undeclared = {name: sorted(where) for name, where in named_in(REPO).items() if name not in declared}
    assert not undeclared, f"declare these in kernel/environment.py (or rename a made-up one): {undeclared}"


def test_every_declared_variable_is_named_somewhere() -> None:
    named = named_in(REPO)
    unused = [v.name for v in VARIABLES if v.name not in named]
    assert not unused, f"declared but named nowhere in the project: {unused}"


def test_the_scan_finds_a_variable_in_a_test_a_manifest_and_the_makefile(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text('os.environ["RUSHHOUR_PLANTED_A"]\n', encoding="utf-8")
    (tmp_path / "deploy.yaml").write_text("- name: RUSHHOUR_PLANTED_B\n", encoding="utf-8")
    (tmp_path / "Makefile").write_text("RUSHHOUR_PLANTED_C ?= 1\n", encoding="utf-8")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "copy.py").write_text("RUSHHOUR_PLANTED_D\n", encoding="utf-8")
    assert named_in(tmp_path) == {"RUSHHOUR_PLANTED_A": {"tests/test_x.py"}, "RUSHHOUR_PLANTED_B": {"deploy.yaml"},
                                  "RUSHHOUR_PLANTED_C": {"Makefile"}}


def test_a_variable_is_declared_once() -> None:
    names = [v.name for v in VARIABLES]
    assert len(names) == len(set(names))


def test_the_reference_page_is_the_declaration() -> None:
    written = (REPO / "docs" / "reference" / "environment.md").read_text(encoding="utf-8")
    assert written == page(), ("docs/reference/environment.md is stale: "
                               ".venv/bin/python -m rushhour.kernel.environment > docs/reference/environment.md")
