"""The schedule window: the part of a run that was planned as load, without boot or teardown.

Node-seconds, dollars and throughput are integrated over this window only. Before it the
cluster boots and warms; after it the generator waits for the last replies and the run stops
the server, which added about 10% to every per-second figure when the whole run was counted.
"""

from __future__ import annotations

from rushhour.reports.rundata.results import RunData

__all__ = ["schedule_window"]


def schedule_window(run: RunData) -> tuple[float, float]:
    """(start, end) in run seconds: [0, the scenario's duration], cut short if the run stopped early.

    Without a planned duration (older scenario files), the window is the whole run.
    """
    planned = run.scenario.traffic.duration_s
    ends = run.events_of("run_end")
    ran = float(ends[-1]["duration_s"]) if ends and ends[-1].get("duration_s") else None
    if planned is None:
        return 0.0, run.duration_s
    return 0.0, min(planned, ran) if ran is not None else planned
