"""A results folder belongs to one run: it is claimed empty, and default names never collide.

A drill reads its own control and part files back while it runs, so a folder shared with an
earlier run (a reused `--out`, two runs started in the same second) would mix the two: stop at
once on the old run's markers, merge its requests, report its verdict. So `--out` must be new
or empty, and a default name carries a random suffix and is created exclusively.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["ResultsDirError", "claim_results_dir", "new_results_dir"]

DEFAULT_ROOT = Path("results")
NAME_ATTEMPTS = 20
SHOWN_ENTRIES = 3


class ResultsDirError(ValueError):
    """A results folder cannot be used for this run; the message names it and says why."""


def new_results_dir(name: str, root: Path = DEFAULT_ROOT) -> Path:
    """Create and return `root/<name>-<UTC timestamp>-<random hex>`, never one that exists."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    root.mkdir(parents=True, exist_ok=True)
    for _ in range(NAME_ATTEMPTS):
        path = root / f"{name}-{stamp}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise ResultsDirError(f'No new results folder could be created under "{root}" for "{name}" '
                          f"after {NAME_ATTEMPTS} attempts.")


def claim_results_dir(path: Path) -> Path:
    """`path` as this run's folder: created when missing, accepted when empty, else refused."""
    if path.exists() and not path.is_dir():
        raise ResultsDirError(f'The results folder "{path}" is a file; pass a new or empty folder as --out.')
    try:
        path.mkdir(parents=True, exist_ok=True)
        entries = sorted(entry.name for entry in path.iterdir())
    except OSError as exc:
        raise ResultsDirError(f'The results folder "{path}" cannot be used: {exc.strerror or exc}.') from exc
    if entries:
        shown = ", ".join(entries[:SHOWN_ENTRIES]) + (", ..." if len(entries) > SHOWN_ENTRIES else "")
        raise ResultsDirError(
            f'The results folder "{path}" is not empty (it holds {shown}); a run never shares its folder '
            "with another, so pass a new or empty --out (or none, for a fresh results/<scenario>-<time>-<id>).")
    return path
