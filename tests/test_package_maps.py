"""Each product package's `__init__` docstring against its folder: it names every module and
sub-package there, and every module it names exists."""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("kernel", "reports", "scenarios", "experiments", "traffic_models", "reference_server")
PY_NAME = re.compile(r"(?<![\w./-])((?:[\w-]+/)*\w+\.py)\b")
LISTED = re.compile(r"^\s+(\w+(?:\.py|/))\s", re.MULTILINE)
CODE = re.compile(r"`([^`\n]+)`")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
DOTTED = re.compile(r"rushhour(?:\.\w+)+")


@cache
def _tracked() -> tuple[str, ...]:
    """The product's tracked Python files, as paths from the repository's root."""
    try:
        done = subprocess.run(["git", "ls-files", "--", *(f"{p}/*.py" for p in PRODUCT)], cwd=REPO,
                              capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"The package list comes from `git ls-files`, which failed here ({exc}): not a git checkout.", allow_module_level=True)
    return tuple(done.stdout.split())


def _packages() -> list[str]:
    return sorted(path.rsplit("/", 1)[0] for path in _tracked() if path.endswith("/__init__.py"))


def _parts(package: str) -> dict[str, str]:
    """Each module and sub-package directly in `package`, by the name a docstring uses for it."""
    parts: dict[str, str] = {}
    for path in _tracked():
        head, _, rest = path.partition(package + "/")
        if head or not rest or rest == "__init__.py":
            continue
        if "/" not in rest:
            parts[rest.removesuffix(".py")] = rest
        elif rest.count("/") == 1 and rest.endswith("/__init__.py"):
            parts[rest.split("/")[0]] = rest.split("/")[0] + "/"
    return parts


def _docstring(package: str) -> str:
    tree = ast.parse((REPO / package / "__init__.py").read_text(encoding="utf-8"))
    return ast.get_docstring(tree) or ""


@cache
def _defined(package: str) -> frozenset[str]:
    """The top-level names the package's modules (at any depth) define or import."""
    names: set[str] = set()
    for path in _tracked():
        if path.startswith(package + "/"):
            for node in ast.parse((REPO / path).read_text(encoding="utf-8")).body:
                names.update(_bound(node))
    return frozenset(names)


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}


def _names(text: str, name: str) -> bool:
    """Whether `text` names the module `name` as a module: `name` (or `name.attribute`), name.py or name/."""
    stem = re.escape(name)
    return re.search(rf"`{stem}[`.]|(?<![\w.-]){stem}\.py\b|(?<![\w.-]){stem}/", text) is not None


def unnamed(package: str, text: str) -> list[str]:
    """The modules and sub-packages of `package` its docstring `text` does not name; a word in
    passing ("the process") does not count."""
    return sorted(file for name, file in _parts(package).items() if not _names(text, name))


def _module_exists(dotted: str) -> bool:
    """A `rushhour.` name is a module or package, or an attribute of one."""
    parts = dotted.split(".")[1:]
    return any(REPO.joinpath(*parts[:n]).with_suffix(".py").exists() or (REPO.joinpath(*parts[:n]) / "__init__.py").exists()
               for n in (len(parts), len(parts) - 1) if n > 0)


def phantoms(package: str, text: str) -> list[str]:
    """What the docstring `text` names as a module of `package` (`x.py`, a listed `x/`, a backticked
    name) that is not there: neither a module, a folder, a product package nor a name defined in one."""
    here = REPO / package
    files = set(PY_NAME.findall(text)) | set(LISTED.findall(text))
    gone = {f for f in files if not (here / f).exists() and not (REPO / f).exists()}
    for span in CODE.findall(text):
        word = span.removesuffix("/")
        if DOTTED.fullmatch(word) and not _module_exists(word):
            gone.add(span)
        elif IDENTIFIER.fullmatch(word) and word not in _parts(package) and word not in (*PRODUCT, "rushhour") \
                and not (here / word).is_dir() and word not in _defined(package):
            gone.add(span)
    return sorted(gone)


def test_every_package_is_found() -> None:
    packages = _packages()
    assert set(PRODUCT) <= set(packages), f"`git ls-files` lists these packages only: {packages}"
    assert "scenarios/run/live" in packages


@pytest.mark.parametrize("package", _packages())
def test_init_names_every_module(package: str) -> None:
    missing = unnamed(package, _docstring(package))
    assert not missing, f"{package}/__init__.py does not name these modules in its docstring: {missing}"


@pytest.mark.parametrize("package", _packages())
def test_init_names_only_modules_that_exist(package: str) -> None:
    gone = phantoms(package, _docstring(package))
    assert not gone, f"{package}/__init__.py names modules that do not exist: {gone}"


def test_a_stale_docstring_is_caught() -> None:
    package = "scenarios/run/chaos"
    stale = "The chaos timeline (`timeline`), each process in `chaosproc.py` and `runner`, `bridge`.\n\n    gone/  nothing"
    assert unnamed(package, stale) == ["main.py", "process.py"]
    assert phantoms(package, stale) == ["chaosproc.py", "gone/", "runner"]
