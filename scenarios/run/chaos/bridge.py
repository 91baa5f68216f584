"""The one seam between a drill and its chaos timeline (rushhour.scenarios.run.chaos.timeline).

Started after the load starts, so fault times line up with request times; stopped (which runs
every rollback) before the server is stopped, so no fault outlives the drill.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.spec.plan import DrillPlan


class Timeline(Protocol):
    def stop(self) -> None: ...

    def heal(self) -> bool: ...


def start_chaos(plan: DrillPlan, *, url: str, token: str | None, out_dir: Path,
                events: EventLog, t0: float, live_dir: Path | None = None) -> Timeline | None:
    """Start the scenario's chaos timeline at wall time `t0`; None when there is nothing to run.

    `live_dir` (the workers' result parts) lets steady-state probes judge the latency users
    see, from the intended send time, instead of the server's own histogram.
    """
    planned = [fault for fault in plan.chaos if fault.in_run]
    if not planned:
        return None
    from rushhour.scenarios.run.chaos.timeline import ChaosTimeline

    def on_event(event: dict[str, object]) -> None:
        fields = dict(event)
        kind = str(fields.pop("type"))
        when = fields.pop("t_s", None)
        events.emit(kind, t_s=float(when) if isinstance(when, (int, float)) else None, **fields)

    traffic = plan.scenario.traffic
    timeline = ChaosTimeline(
        planned, time_scale=traffic.time_scale, start_clock_s=traffic.start_clock_s, out_dir=out_dir,
        url=url, token=token or os.environ.get("RUSHHOUR_ADMIN_TOKEN", ""), on_event=on_event, clock=time.time,
        env={"RUSHHOUR_LIVE": str(live_dir)} if live_dir is not None else None,
    )
    timeline.start(t0)
    return timeline


def report_skipped_faults(plan: DrillPlan, *, say: Callable[[str], None], events: EventLog) -> None:
    """A fault the scenario places outside this run (a `--duration` shorter than its day, say) is
    said and written down, never dropped in silence: the drill did not rehearse it."""
    for fault in plan.chaos:
        if fault.in_run:
            continue
        say(f"warning: {fault.name} at {fault.scenario_time} ({fault.offset_s:.1f} s) falls outside this run "
            f"(0-{plan.duration_s:.1f} s); it is not injected")
        events.emit("fault_skipped", t_s=0.0, source="harness", name=fault.name, offset_s=fault.offset_s,
                    reason="outside the run")
