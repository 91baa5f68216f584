"""The drill's one seam to watching it live: the metrics endpoint and the terminal view.

`open_live` is called before the drill (so a taken port is a usage error, not a half-run drill)
and returns None when there is nothing to watch: no `--metrics-port` and no terminal. The drill
then calls `begin`, `tick`, `printer` and `close`; a failure in here is reported once and the
live view stops, the drill and its results go on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO

import pandas as pd

from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.run.live.metrics import DEFAULT_HOST, LiveMetricsError, MetricsServer
from rushhour.scenarios.run.live.state import LiveState
from rushhour.scenarios.run.live.view import LiveView
from rushhour.scenarios.spec.plan import DrillPlan

__all__ = ["LiveMetricsError", "LiveWatch", "open_live"]


class Printer(Protocol):
    def show(self, line: str, elapsed_s: float) -> None: ...

    def close(self) -> None: ...


@dataclass
class LiveWatch:
    """Live state of one drill, its optional metrics server, and whether a terminal watches."""

    state: LiveState
    server: MetricsServer | None
    stream: TextIO
    view: bool
    broken: bool = False

    def begin(self, t0: float, events: EventLog, target_url: str | None = None, control_dir: Path | None = None) -> None:
        """The load on `target_url` started at wall time `t0`; the metrics endpoint goes into events.jsonl;
        `control_dir` is the load's control folder (across hosts, the master's rejections are there)."""
        self.state.begin(t0, target_url, control_dir)
        if self.server is not None:
            events.emit("live_metrics", source="harness", url=self.server.url, host=self.server.host,
                        port=self.server.port)

    def tick(self, parts: pd.DataFrame, cpu_ratio: float | None = None) -> None:
        if self.broken:
            return
        try:
            self.state.tick(parts, cpu_ratio)
        except Exception as exc:  # noqa: BLE001 - watching must never end the drill
            self.broken = True
            self.stream.write(f"warning: the live view stopped: {exc}\n")

    def printer(self, fallback: Printer) -> Printer:
        """The terminal view on a TTY, else the one-line progress printer."""
        return LiveView(self.state, self.stream) if self.view and not self.broken else fallback

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None


def open_live(plan: DrillPlan, results_dir: Path, *, port: int | None, host: str = DEFAULT_HOST,
              stream: TextIO) -> LiveWatch | None:
    """Start the metrics endpoint when asked; raises LiveMetricsError when it cannot listen."""
    view = stream.isatty()
    if port is None and not view:
        return None
    state = LiveState(plan, results_dir)
    server = MetricsServer(state, port=port, host=host) if port is not None else None
    if server is not None:
        stream.write(f"live metrics: {server.url}\n")
        stream.flush()
    return LiveWatch(state, server, stream, view)
