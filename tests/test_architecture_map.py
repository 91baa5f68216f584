"""ARCHITECTURE.md's map against the tree: every path and `rushhour.` module it names exists, and it names every package."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("kernel", "traffic_models", "scenarios", "reports", "experiments", "reference_server")
FOLDERS = (*PACKAGES, "benchmarks", "tests", "docs", "ci", ".ci")
CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"(?<![\w./])(?:[a-z_.][\w.-]*/)*[a-z_][\w-]*(?:\.(?:py|yaml|json|md|sh|yml|j2)\b|/)")
MODULE = re.compile(r"\brushhour(?:\.\w+)+")


def _map() -> str:
    return (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _tree() -> set[str]:
    """Every file and folder below the project's folders, as paths from the repository's root."""
    found = {p.name for p in REPO.iterdir()}
    for folder in FOLDERS:
        for path in (REPO / folder).rglob("*"):
            if "__pycache__" not in path.parts:
                found.add(path.relative_to(REPO).as_posix())
    return found


def _named_paths(text: str) -> set[str]:
    """The file and folder paths the map names in code spans, left out: placeholders (`<run>`, `*.py`)."""
    spans = [span for span in CODE.findall(text) + re.findall(r"^ {2,}.*$", text, re.MULTILINE)
             if not re.search(r"[<>*]", span)]
    return {match.rstrip("/") for span in spans for match in PATH.findall(span)
            if not match.startswith(("results/", "http"))}


def _exists(name: str, tree: set[str]) -> bool:
    """A path from the root, or the tail of one (the map names a module inside the folder it speaks of)."""
    return name in tree or any(path.endswith("/" + name) for path in tree)


def test_every_path_the_map_names_exists() -> None:
    tree = _tree()
    missing = sorted(name for name in _named_paths(_map()) if not _exists(name, tree))
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_rushhour_module_the_map_names_exists() -> None:
    def found(dotted: str) -> bool:
        parts = dotted.split(".")[1:]
        return any((REPO.joinpath(*parts[:n]).with_suffix(".py")).exists() or (REPO.joinpath(*parts[:n]) / "__init__.py").exists()
                   for n in range(len(parts), 0, -1))

    missing = sorted(dotted for dotted in set(MODULE.findall(_map())) if not found(dotted))
    assert not missing, f"ARCHITECTURE.md names modules that do not exist: {missing}"


def test_the_map_names_every_package() -> None:
    text = _map()
    packages = sorted(init.parent.relative_to(REPO).as_posix() for name in PACKAGES
                      for init in (REPO / name).rglob("__init__.py") if "__pycache__" not in init.parts)
    silent = [p for p in packages if f"`{p}/" not in text and f"`{p.rsplit('/', 1)[-1]}/`" not in text]
    assert not silent, f"ARCHITECTURE.md does not name these packages: {silent}"


def test_the_path_check_finds_a_module_that_is_gone() -> None:
    tree = _tree()
    named = _named_paths("chaos in `scenarios/run/chaosproc.py`, the folder `scenarios/run/chaos/` and `live/progress.py`")
    assert named == {"scenarios/run/chaosproc.py", "scenarios/run/chaos", "live/progress.py"}
    assert [name for name in sorted(named) if not _exists(name, tree)] == ["scenarios/run/chaosproc.py"]
