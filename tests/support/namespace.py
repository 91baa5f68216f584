"""build/namespace/rushhour: links to the top-level folders under the names they are installed as.

The distribution installs `kernel/` as `rushhour.kernel` (setup.py); Python finds that through the
editable install's import hook, which mypy and import-linter do not run. They read the packages
through these links instead (`mypy_path` and the architecture test point at them). Run as
`python -m tests.support.namespace` to lay them by hand.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("kernel", "reference_server", "traffic_models", "scenarios", "experiments", "reports")
NAMESPACE = REPO / "build" / "namespace"


def lay_namespace() -> Path:
    """Create (or repair) the links; returns the folder to put on a search path."""
    package = NAMESPACE / "rushhour"
    package.mkdir(parents=True, exist_ok=True)
    for folder in FOLDERS:
        link = package / folder
        target = Path("..") / ".." / ".." / folder
        if link.is_symlink() and link.readlink() == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
    return NAMESPACE


if __name__ == "__main__":
    print(lay_namespace())
