"""build_ab: an A/B results folder in, ab.json, ab.md, ab.html and junit.xml out (and the document)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rushhour.kernel.contract import AB_COLUMNS, REQUESTS_FILE
from rushhour.reports.ab.document import ab_document
from rushhour.reports.ab.render import write_ab_files
from rushhour.reports.rundata.results import RunData, load_run

__all__ = ["build_ab", "is_ab_folder"]


def is_ab_folder(root: Path) -> bool:
    """Whether `root` holds an A/B run (its requests carry the arm and trial columns)."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    path = Path(root) / REQUESTS_FILE
    if not path.is_file():
        return False
    try:
        names = set(pq.read_schema(path).names)
    except Exception:  # noqa: BLE001 - an unreadable file is judged (and reported) by load_run
        return False
    return set(AB_COLUMNS) <= names


def build_ab(root: Path, run: RunData | None = None) -> dict[str, Any]:
    """Judge the run and write its files; raises rushhour.reports.rundata.results.ResultsError for a folder that is
    not an A/B run or is malformed."""
    run = run or load_run(Path(root))
    doc = ab_document(run)
    write_ab_files(Path(root), doc)
    return doc
