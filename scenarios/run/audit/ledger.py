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

from rushhour.kernel.atomic import write_json_atomic

__all__ = ["LEDGER_FILE", "ProcessLedger", "Tracked", "survivors"]

LEDGER_FILE = "processes.json"
CHAOS_MARK = "rushhour.scenarios.run.chaos.main"


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


def _key(proc: psutil.Process) -> tuple[int, float] | None:
    try:
        return proc.pid, proc.create_time()
    except psutil.Error:
        return None


class ProcessLedger:
    """The run's processes, as observed; `path` (when given) always holds the current list.

    One look is one scan of the process table, and a process's command line is read once,
    when it is first seen."""

    def __init__(self, path: Path | None = None, *, root: int | None = None) -> None:
        self.path = path
        self._root = root if root is not None else psutil.Process().pid
        self._seen: dict[tuple[int, float], Tracked] = {}
        self._commands: dict[tuple[int, float], str] = {}

    def observe(self) -> None:
        """Add the processes of the family that are new since the last look."""
        fresh = [t for t in map(self._track, self._family()) if t is not None]
        if fresh and self.path is not None:
            write_json_atomic({"processes": [asdict(t) for t in self.tracked]}, self.path)

    def _command(self, proc: psutil.Process) -> tuple[tuple[int, float], str] | None:
        key = _key(proc)
        if key is None:
            return None
        if key not in self._commands:
            try:
                self._commands[key] = " ".join(proc.cmdline())[:200]
            except psutil.Error:
                return None
        return key, self._commands[key]

    def _track(self, proc: psutil.Process) -> Tracked | None:
        """The process as a new ledger entry; None when it is known already or gone."""
        known = self._command(proc)
        if known is None or known[0] in self._seen:
            return None
        (pid, started), command = known
        self._seen[known[0]] = item = Tracked(pid=pid, started=started, command=command)
        return item

    def _family(self) -> list[psutil.Process]:
        """The root's children, and all descendants of those that are not chaos runs."""
        by_parent: dict[int, list[psutil.Process]] = {}
        for proc in psutil.process_iter(["ppid"]):
            by_parent.setdefault(int(proc.info["ppid"] or 0), []).append(proc)
        found: list[psutil.Process] = []
        for child in by_parent.get(self._root, []):
            found.append(child)
            known = self._command(child)
            if known is not None and CHAOS_MARK in known[1]:
                continue
            stack = list(by_parent.get(child.pid, []))
            while stack:
                proc = stack.pop()
                found.append(proc)
                stack += by_parent.get(proc.pid, [])
        return found

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
