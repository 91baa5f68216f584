"""The one seam between a drill and its chaos timeline (experiments.timeline).

Started after the load starts, so fault times line up with request times; stopped (which runs
every rollback) before the server is stopped, so no fault outlives the drill.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol

from scenarios.events import EventLog
from scenarios.plan import DrillPlan


class Timeline(Protocol):
    def stop(self) -> None: ...


def start_chaos(plan: DrillPlan, *, url: str, token: str | None, out_dir: Path,
                events: EventLog, t0: float) -> Timeline | None:
    """Start the scenario's chaos timeline at wall time `t0`; None when there is nothing to run."""
    planned = [c for c in plan.chaos if c.in_run]
    if not planned:
        return None
    from experiments.timeline import ChaosEntry, ChaosTimeline

    def on_event(event: dict[str, object]) -> None:
        fields = dict(event)
        events.emit(str(fields.pop("type")), **fields)

    traffic = plan.scenario.traffic
    timeline = ChaosTimeline(
        [
            ChaosEntry(at=c.entry.at, experiment=c.experiment, name=c.entry.label, hold=c.entry.hold, env=c.entry.env,
                       hypothesis=c.entry.hypothesis)
            for c in planned
        ],
        time_scale=traffic.time_scale, start_clock_s=traffic.start_clock_s, out_dir=out_dir,
        url=url, token=token or os.environ.get("RUSHHOUR_ADMIN_TOKEN", ""), on_event=on_event,
        base_dir=plan.base_dir, duration_s=plan.duration_s, clock=time.time,
    )
    timeline.start(t0)
    return timeline
