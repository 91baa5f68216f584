"""Baselines made of one or several runs, and whether two runs replayed the same schedule.

A baseline is a results directory, or a directory whose sub-directories are results directories
(`ci/baselines/nightly/run-1`, `run-2`, ...), or several of either. Several same-code runs let
the gate measure run-to-run noise instead of assuming it away.

Two runs replayed the same schedule when their requests line up row by row: requests.parquet
keeps schedule order, so row i of both is the same scheduled request when the schedule columns
(intended send, kind, length, priority, mode, tenant, phase; and text id where schedule.parquet
is kept) agree on every row. Only then can the gate compare each request with itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rushhour.kernel.contract import REQUEST_COLUMNS, REQUESTS_FILE, SCHEDULE_COLUMNS, SCHEDULE_FILE, columns_of
from rushhour.reports.rundata.results import ResultsError, RunData, load_run

__all__ = ["ScheduleMismatch", "baseline_dirs", "load_baselines", "schedule_difference"]

SCHEDULED_REQUEST_COLUMNS = columns_of(
    REQUEST_COLUMNS, "intended_s", *columns_of(SCHEDULE_COLUMNS, "kind", "chars", "priority", "mode", "tenant", "phase"))
"""The requests columns the schedule decided (its offset, as `intended_s`, and what it drew): two
runs replayed the same schedule when these agree row by row."""


class ScheduleMismatch(ResultsError):
    """A paired comparison was asked for runs that did not replay the same schedule."""


def baseline_dirs(paths: Path | Sequence[Path]) -> list[Path]:
    """The run directories a baseline argument names, in a stable order."""
    roots = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    found: list[Path] = []
    for root in roots:
        if not root.is_dir():
            raise ResultsError(f'Baseline "{root}" does not exist or is not a directory.')
        if (root / REQUESTS_FILE).exists():
            found.append(root)
            continue
        runs = sorted(p for p in root.iterdir() if (p / REQUESTS_FILE).exists())
        if not runs:
            raise ResultsError(f'Baseline "{root}" holds no requests.parquet, directly or in a sub-directory.')
        found.extend(runs)
    return found


def load_baselines(paths: Path | Sequence[Path]) -> list[RunData]:
    """Load every run a baseline argument names (see baseline_dirs)."""
    return [load_run(path) for path in baseline_dirs(paths)]


def schedule_difference(first: RunData, second: RunData) -> str | None:
    """None when both runs replayed the same schedule, else a sentence saying where they part."""
    a, b = _schedule_frame(first), _schedule_frame(second)
    where = f'"{first.root}" and "{second.root}"'
    if len(a) != len(b):
        return f"{where} scheduled {len(a):,} and {len(b):,} requests."
    columns = [c for c in a.columns if c in b.columns]
    for column in columns:
        left, right = a[column].to_numpy(), b[column].to_numpy()
        same = np.isclose(left, right, rtol=0, atol=1e-9) if left.dtype.kind == "f" else left == right
        if not same.all():
            row = int(np.flatnonzero(~same)[0])
            return (f'{where} differ at request {row}: {column} is "{left[row]}" and "{right[row]}" '
                    f"({int((~same).sum()):,} requests differ).")
    return None


def _schedule_frame(run: RunData) -> pd.DataFrame:
    frame = run.requests.loc[:, list(SCHEDULED_REQUEST_COLUMNS)].reset_index(drop=True)
    schedule = run.root / SCHEDULE_FILE
    if schedule.exists():
        try:
            text_id = pd.read_parquet(schedule, columns=["text_id"])["text_id"]
        except (KeyError, ValueError, OSError):
            return frame
        if len(text_id) == len(frame):
            frame["text_id"] = text_id.to_numpy()
    return frame
