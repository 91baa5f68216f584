"""Every RUSHHOUR_* variable the code names is declared once (rushhour.kernel.environment), and the
reference page is that declaration."""

from __future__ import annotations

import re
from pathlib import Path

from rushhour.kernel.environment import VARIABLES, page

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("kernel", "reference_server", "traffic_models", "scenarios", "experiments", "reports")
NAME = re.compile(r"\bRUSHHOUR_[A-Z0-9_]*[A-Z0-9]\b")


def _named_in_code() -> dict[str, set[str]]:
    named: dict[str, set[str]] = {}
    for folder in FOLDERS:
        for path in (*(REPO / folder).rglob("*.py"), *(REPO / folder).rglob("*.json")):
            if path.name == "environment.py" and path.parent.name == "kernel":
                continue
            for name in NAME.findall(path.read_text(encoding="utf-8")):
                named.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return named


def test_every_variable_the_code_names_is_declared() -> None:
    declared = {v.name for v in VARIABLES}
    undeclared = {name: sorted(where) for name, where in _named_in_code().items() if name not in declared}
    assert not undeclared, f"declare these in rushhour/kernel/environment.py: {undeclared}"


def test_every_declared_variable_is_read_somewhere() -> None:
    named = _named_in_code()
    unused = [v.name for v in VARIABLES if v.name not in named]
    assert not unused, f"declared but named nowhere in the code: {unused}"


def test_a_variable_is_declared_once() -> None:
    names = [v.name for v in VARIABLES]
    assert len(names) == len(set(names))


def test_the_reference_page_is_the_declaration() -> None:
    written = (REPO / "docs" / "reference" / "environment.md").read_text(encoding="utf-8")
    assert written == page(), ("docs/reference/environment.md is stale: "
                               "python -m rushhour.kernel.environment > docs/reference/environment.md")
