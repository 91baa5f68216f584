"""Every process a drill started, written down as it appears, so none can go unnoticed.

The drill observes its process family on every tick: its own children (the server, Locust, the
chaos runs) and the descendants of the server and Locust (nodes, forked load workers). A chaos
run's own children are not ours to audit: an experiment may start a service on purpose (the
Redis that a rollback brings back) or a lease watchdog that must outlive it. The ledger is kept
in `processes.json` (atomically), so after a harness killed with SIGKILL, `rushhour report`
can still tell which of them are alive. A process is known by pid *and* start time, so a
recycled pid is never mistaken for ours.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from scenarios.run.atomic import write_json_atomic

__all__ = ["LEDGER_FILE", "ProcessLedger", "Tracked", "survivors"]

LEDGER_FILE = "processes.json"
CHAOS_MARK = "scenarios.run.chaos_main"


@dataclass(frozen=True)
class Tracked:
    """One process of the run: pid, start time (epoch s), and its command line, shortened."""

    pid: int
    started: float
    command: str

    def alive(self) -> bool:
        try:
            proc = psutil.Process(self.pid)
            return abs(proc.create_time() - self.started) < 0.5 and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def _tracked(proc: psutil.Process) -> Tracked | None:
    try:
        return Tracked(pid=proc.pid, started=proc.create_time(), command=" ".join(proc.cmdline())[:200])
    except psutil.Error:
        return None


def _family(root: psutil.Process) -> list[psutil.Process]:
    """`root`'s children, and all descendants of those that are not chaos runs."""
    found: list[psutil.Process] = []
    try:
        children = root.children()
    except psutil.Error:
        return found
    for child in children:
        found.append(child)
        try:
            if CHAOS_MARK not in " ".join(child.cmdline()):
                found += child.children(recursive=True)
        except psutil.Error:
            continue
    return found


class ProcessLedger:
    """The run's processes, as observed; `path` (when given) always holds the current list."""

    def __init__(self, path: Path | None = None, *, root: int | None = None) -> None:
        self.path = path
        self._root = psutil.Process(root) if root is not None else psutil.Process()
        self._seen: dict[tuple[int, float], Tracked] = {}

    def observe(self) -> None:
        """Add the processes of the family that are new since the last look."""
        fresh = [t for t in map(_tracked, _family(self._root)) if t is not None and (t.pid, t.started) not in self._seen]
        for item in fresh:
            self._seen[(item.pid, item.started)] = item
        if fresh and self.path is not None:
            write_json_atomic({"processes": [asdict(t) for t in self.tracked]}, self.path)

    @property
    def tracked(self) -> list[Tracked]:
        return sorted(self._seen.values(), key=lambda t: t.started)

    def alive(self) -> list[Tracked]:
        return [t for t in self.tracked if t.alive()]


def survivors(path: Path) -> list[Tracked] | None:
    """The processes a `processes.json` lists that are still alive; None without a ledger."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        items = [Tracked(**entry) for entry in data.get("processes", [])]
    except (OSError, ValueError, TypeError):
        return None
    return [t for t in items if t.alive()]
