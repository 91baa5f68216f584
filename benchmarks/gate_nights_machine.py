"""What else the machine did during a gate night: its busy cores, split into this benchmark's and the rest.

The protocol asks for nights with the noisy neighbour and nothing else; on a shared machine other
work comes and goes, and a night beside it is not the night the protocol describes. So each night
records how many cores were busy (from /proc/stat), how many of them this benchmark's own process
tree used (the servers, the generator, the neighbour: /proc/<pid>/stat of every live descendant,
plus what the reaped ones left in their parents' counts), and the difference: `other_cores`, the
work of everything else. Before a night starts, `wait_for_quiet` waits (bounded) until that other
work stays under a threshold for a sample window, so a night is chosen to start on a quiet machine
before its outcome is known, never dropped after it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MachineSample", "Quiet", "machine_busy_s", "tree_cpu_s", "wait_for_quiet"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
"""/proc/stat's cpu line: user, nice, system, (idle, iowait), irq, softirq, steal."""


def machine_busy_s(stat: Path = Path("/proc/stat")) -> float:
    """CPU seconds every core of the machine has spent busy since boot."""
    fields = stat.read_text(encoding="ascii").splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in BUSY_FIELDS) / CLOCK_TICKS


def _stats(proc: Path = Path("/proc")) -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, own + reaped children's CPU seconds) of every live process."""
    found: dict[int, tuple[int, float]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while the table was read
        found[int(entry.name)] = (int(fields[1]), sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLOCK_TICKS)
    return found


def tree_cpu_s(root: int | None = None) -> float:
    """CPU seconds the process tree under `root` (default: this process) has used: every live
    descendant's own and reaped children's time, plus the children `root` itself has reaped."""
    root = os.getpid() if root is None else root
    stats = _stats()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    own = stats.get(root, (0, 0.0))
    total = own[1] - _self_cpu_s(root)
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total


def _self_cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass(frozen=True)
class MachineSample:
    """The machine's busy CPU seconds and this tree's, at one moment."""

    wall: float
    busy_s: float
    ours_s: float

    @classmethod
    def now(cls) -> MachineSample:
        return cls(time.monotonic(), machine_busy_s(), tree_cpu_s())

    def cores_since(self, earlier: MachineSample) -> dict[str, float]:
        """Average busy cores between two samples: the machine's, this tree's, and the rest."""
        span = max(self.wall - earlier.wall, 1e-9)
        busy, ours = (self.busy_s - earlier.busy_s) / span, (self.ours_s - earlier.ours_s) / span
        return {"busy_cores": round(busy, 2), "our_cores": round(ours, 2), "other_cores": round(max(busy - ours, 0.0), 2)}


@dataclass(frozen=True)
class Quiet:
    """How long the wait for a quiet machine took and what the last window showed."""

    waited_s: float
    other_cores: float
    quiet: bool


def wait_for_quiet(max_other_cores: float, max_wait_s: float, window_s: float = 10.0,
                   sleep: Callable[[float], None] = time.sleep) -> Quiet:
    """Sample `window_s` windows until other work used at most `max_other_cores`, or `max_wait_s` passed."""
    started = time.monotonic()
    while True:
        before = MachineSample.now()
        sleep(window_s)
        other = MachineSample.now().cores_since(before)["other_cores"]
        waited = time.monotonic() - started
        if other <= max_other_cores or waited >= max_wait_s:
            return Quiet(waited_s=round(waited, 1), other_cores=other, quiet=other <= max_other_cores)
