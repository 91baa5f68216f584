"""Result files written whole or not at all: a temporary file beside the target, then a rename.

A harness killed while writing `requests.parquet` or a JSON record must leave either the old
file or none, never half of one that a later `rushhour report` would read as the truth. Kept in
the bottom layer so the drill and the reports (`summary.json`) write results the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["write_json_atomic", "write_parquet_atomic"]


def _replace(tmp: Path, path: Path) -> None:
    with tmp.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_parquet_atomic(frame: pd.DataFrame, path: Path) -> None:
    """`frame` to `path` as parquet, atomically."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        frame.to_parquet(tmp, index=False)
        _replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json_atomic(data: Any, path: Path) -> None:
    """`data` to `path` as indented JSON, atomically."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        _replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
