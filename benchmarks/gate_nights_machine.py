"""What else the machine did during a gate night: its busy cores, split into this benchmark's and the rest.

The protocol asks for nights with the noisy neighbour and nothing else; on a shared machine other
work comes and goes, and a night beside it is not the night the protocol describes. So each night
records how many cores were busy (from /proc/stat), how many of them this benchmark's own process
tree used (the servers, the generator, the neighbour: /proc/<pid>/stat of every descendant,
read every second, `TreeWatch`), and the difference: `other_cores`, the
work of everything else. Before a night starts, `wait_for_quiet` waits (bounded) until that other
work stays under a threshold for a sample window, so a night is chosen to start on a quiet machine
before its outcome is known, never dropped after it.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NightMachine", "Quiet", "TreeWatch", "machine_busy_s", "split_cores", "tree_cpu", "wait_for_quiet"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
"""/proc/stat's cpu line: user, nice, system, (idle, iowait), irq, softirq, steal."""


def machine_busy_s(stat: Path = Path("/proc/stat")) -> float:
    """CPU seconds every core of the machine has spent busy since boot."""
    fields = stat.read_text(encoding="ascii").splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in BUSY_FIELDS) / CLOCK_TICKS


def _stats(proc: Path = Path("/proc")) -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, own CPU seconds) of every live process."""
    found: dict[int, tuple[int, float]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while the table was read
        found[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return found


def tree_cpu(root: int | None = None) -> dict[int, float]:
    """Own CPU seconds of every live process in the tree under `root` (default: this process)."""
    root = os.getpid() if root is None else root
    stats = _stats()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found[pid] = stats[pid][1]
        todo.extend(children.get(pid, []))
    return found


@dataclass
class TreeWatch:
    """The CPU seconds this process's tree uses from `start` to `stop`, read every `every_s`.

    A descendant's time is its last reading less its first (zero for one born meanwhile), so a
    process that ends unwaited (a node killed with its gateway) still counts up to its last reading,
    at most `every_s` short; the reaped children's sums in /proc are never read, so nothing counts twice."""

    every_s: float = 1.0
    _first: dict[int, float] = field(default_factory=dict)
    _last: dict[int, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TreeWatch:
        self._first = tree_cpu()
        self._last = dict(self._first)
        self._thread = threading.Thread(target=self._run, name="tree-watch", daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        for pid, cpu in tree_cpu().items():
            self._last[pid] = max(cpu, self._last.get(pid, 0.0))

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._read()

    def stop(self) -> float:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._read()
        return sum(cpu - self._first.get(pid, 0.0) for pid, cpu in self._last.items())


@dataclass
class NightMachine:
    """A night's busy cores: the machine's (/proc/stat), this tree's (`TreeWatch`) and the rest."""

    _wall: float = 0.0
    _busy: float = 0.0
    _watch: TreeWatch = field(default_factory=TreeWatch)

    def start(self) -> NightMachine:
        self._wall, self._busy = time.monotonic(), machine_busy_s()
        self._watch.start()
        return self

    def stop(self) -> dict[str, float]:
        ours = self._watch.stop()
        return split_cores(time.monotonic() - self._wall, machine_busy_s() - self._busy, ours)


def split_cores(span_s: float, busy_s: float, ours_s: float) -> dict[str, float]:
    """Average busy cores over `span_s`: the machine's, this tree's, and everything else's."""
    span = max(span_s, 1e-9)
    busy, ours = busy_s / span, ours_s / span
    return {"busy_cores": round(busy, 2), "our_cores": round(ours, 2), "other_cores": round(max(busy - ours, 0.0), 2)}


@dataclass(frozen=True)
class Quiet:
    """How long the wait for a quiet machine took and what the last window showed."""

    waited_s: float
    other_cores: float
    quiet: bool


def wait_for_quiet(max_other_cores: float, max_wait_s: float, window_s: float = 10.0) -> Quiet:
    """Sample `window_s` windows until other work used at most `max_other_cores`, or `max_wait_s` passed."""
    started = time.monotonic()
    while True:
        machine = NightMachine().start()
        time.sleep(window_s)
        other = machine.stop()["other_cores"]
        waited = time.monotonic() - started
        if other <= max_other_cores or waited >= max_wait_s:
            return Quiet(waited_s=round(waited, 1), other_cores=other, quiet=other <= max_other_cores)
