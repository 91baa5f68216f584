"""Finish the results of a run whose harness died before writing them (SIGKILL, a lost machine).

A drill writes its timeline (`events.jsonl`) and the load workers write their part files as
they go; only the merge into `requests.parquet`, the leak audit and the final events wait for the
teardown. A results folder whose timeline has no `run_end` never got that far, and
`rushhour report DIR` calls `rebuild_results` first: it merges the part files onto the schedule
(unsent rows stay "not sent"), checks which recorded processes of the run are still alive, and
closes the timeline with an `abort` (so the verdict is "invalid") and a `run_end`. A killed
`rushhour ab` run keeps its arm and trial columns (they are in its schedule), so the rebuilt
folder is still an A/B run, judged invalid by its own report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from rushhour.kernel.atomic import write_json_atomic, write_parquet_atomic
from rushhour.kernel.contract import (
    AB_COLUMNS,
    EVENTS_FILE,
    REQUESTS_FILE,
    SCENARIO_FILE,
    SCHEDULE_FILE,
    SERVER_METRICS_FILE,
)
from rushhour.kernel.eventlines import read_event_file
from rushhour.reports.rundata.results import UNTRUSTED_SOURCES
from rushhour.scenarios.load.merge import merge_to_file
from rushhour.scenarios.load.parts import list_parts
from rushhour.scenarios.run.audit.leakaudit import AUDIT_FILE, LeakAudit, process_findings
from rushhour.scenarios.run.audit.ledger import LEDGER_FILE, survivors
from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.run.scraper import metrics_frame
from rushhour.scenarios.spec.model import ScenarioError, load_scenario

__all__ = ["Rebuilt", "events_so_far", "needs_rebuild", "rebuild_results"]

PARTS_DIR = Path("load") / "parts"  # LoadSettings.work_dir is <results>/load, its parts under parts/
HARNESS_SOURCES = (None, "harness")
"""The `source` of the harness's own events: it writes `run_end` with none."""
ABORT_REASON = ("the harness stopped before writing its results (killed?); `rushhour report` rebuilt them "
                "from {parts} part file(s) written during the run")


@dataclass(frozen=True)
class Rebuilt:
    """What the rebuild found: part files merged, rows answered, processes still alive."""

    parts: int
    recorded: int
    survivors: int


def events_so_far(path: Path) -> list[dict[str, Any]]:
    """The events a timeline holds, read while it may still be written (or after a kill) through the
    event models (`rushhour.kernel.eventlines`): a line cut short by the kill, or one its model
    refuses, is left out; a missing file is no events."""
    return read_event_file(path).raw


def needs_rebuild(root: Path) -> bool:
    """A drill's folder (it has a schedule) whose timeline never reached the harness's own
    `run_end`: one of another source (a target's, one planted in the file) ends nothing."""
    if not (root / SCHEDULE_FILE).is_file():
        return False
    return not any(_harness_end(e) for e in events_so_far(root / EVENTS_FILE))


def _harness_end(event: dict[str, Any]) -> bool:
    return event.get("type") == "run_end" and event.get("source") in HARNESS_SOURCES


def _via_jobs(root: Path) -> bool:
    try:
        scenario = load_scenario(root / SCENARIO_FILE)
    except (ScenarioError, OSError):
        return False
    return scenario.load.jobs_in_use


def _carried(schedule: Path) -> dict[str, str] | None:
    """The A/B columns the schedule holds (an `ab` run's), carried into requests.parquet."""
    names = set(pq.read_schema(schedule).names)
    carried = {name: dtype for name, dtype in AB_COLUMNS.items() if name in names}
    return carried or None


def rebuild_results(root: Path) -> Rebuilt | None:
    """Rebuild an interrupted run's results in `root`; None when there is nothing to rebuild."""
    if not needs_rebuild(root):
        return None
    parts = list_parts(root / PARTS_DIR)
    merge_to_file(root / SCHEDULE_FILE, parts, root / REQUESTS_FILE, documents_via_jobs=_via_jobs(root),
                  keep=_carried(root / SCHEDULE_FILE))
    requests = pd.read_parquet(root / REQUESTS_FILE, columns=["done_s"])
    if not (root / SERVER_METRICS_FILE).is_file():
        write_parquet_atomic(metrics_frame([]), root / SERVER_METRICS_FILE)
    audit = LeakAudit()
    audit.skip("target", "the harness died before its teardown, so the target was not audited; "
                         "every fault rushhour injects ends by its lease")
    alive = survivors(root / LEDGER_FILE)
    if alive is None:
        audit.skip("processes", f"no {LEDGER_FILE} was written")
    else:
        audit.add("processes", process_findings(alive))
    end_s = _last_time(requests, events_so_far(root / EVENTS_FILE))
    result = audit.result(end_s)
    write_json_atomic(result, root / AUDIT_FILE)
    _cut_partial_line(root / EVENTS_FILE)
    log = EventLog(root / EVENTS_FILE, origin=0.0)
    log.emit("abort", t_s=end_s, reason=ABORT_REASON.format(parts=len(parts)), source="rushhour report")
    log.emit("leak_audit", t_s=end_s, **{k: v for k, v in result.items() if k != "t_s"})
    log.emit("run_end", t_s=end_s, duration_s=round(end_s, 3), interrupted=True, rebuilt=True)
    log.close()
    return Rebuilt(parts=len(parts), recorded=int(requests["done_s"].notna().sum()), survivors=len(alive or []))


def _cut_partial_line(path: Path) -> None:
    """Drop a last line the kill cut short (no newline), so the timeline stays valid JSON lines."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def _last_time(requests: pd.DataFrame, events: list[dict[str, object]]) -> float:
    """The last moment the run left evidence of: an answer or an event of the harness's (a
    target's events are placed by the target's own clock, and are not evidence of the run's end)."""
    times = [float(str(e["t_s"])) for e in events
             if isinstance(e.get("t_s"), (int, float)) and e.get("source") not in UNTRUSTED_SOURCES]
    done = requests["done_s"].dropna()
    return max([0.0, *times, *([float(done.max())] if len(done) else [])])
