"""A noisy neighbour of our own: processes that take 0 to N cores in random bursts.

    python -m benchmarks.noisy_neighbour [--cores 2] [--duration 60] [--seed 1] [--log FILE]

Shared CI runners are noisy because other jobs come and go: a core is taken for a fraction of a
second or for a few seconds, then given back. Each of `cores` worker processes reproduces that
on its own: it alternates a busy burst (a spinning loop) with an idle gap, both drawn log-uniform
between `min_s` and `max_s` (0.2 s to 3 s by default), so the machine loses 0, 1 or 2 cores at
random moments on every time scale a drill's trial can have. Everything is bounded: a worker
stops by itself at its deadline, dies with its parent, and `NoisyNeighbour.stop()` ends it by
PID. With `--log`, each burst is written as a JSON line {worker, start, end} (Unix seconds), so a
benchmark can say how many cores the neighbour took on average.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rushhour.kernel.processes import die_with_parent, stop_process

__all__ = ["NoisyNeighbour", "busy_cores"]

DEFAULT_MIN_S = 0.2
DEFAULT_MAX_S = 3.0


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def spin_until(deadline: float) -> None:
    """Keep one core busy until `deadline` (monotonic seconds)."""
    x = 0
    while time.monotonic() < deadline:
        for _ in range(10_000):
            x += 1


def worker(index: int, seed: int, duration_s: float, min_s: float, max_s: float, log: Path | None) -> None:
    """One neighbour process: burst, gap, burst... until `duration_s` has passed."""
    rng = np.random.default_rng([seed, index])
    end = time.monotonic() + duration_s
    time.sleep(min(_log_uniform(rng, min_s, max_s) * rng.random(), max(0.0, end - time.monotonic())))
    while time.monotonic() < end:
        burst = min(_log_uniform(rng, min_s, max_s), end - time.monotonic())
        start_wall = time.time()
        spin_until(time.monotonic() + burst)
        if log is not None:
            with log.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"worker": index, "start": start_wall, "end": time.time()}) + "\n")
        time.sleep(max(0.0, min(_log_uniform(rng, min_s, max_s), end - time.monotonic())))


@dataclass
class NoisyNeighbour:
    """`cores` bursty worker processes, started together, each bounded by `duration_s`."""

    cores: int = 2
    duration_s: float = 3600.0
    seed: int = 1
    min_s: float = DEFAULT_MIN_S
    max_s: float = DEFAULT_MAX_S
    log: Path | None = None
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> NoisyNeighbour:
        for index in range(self.cores):
            command = [sys.executable, "-m", "benchmarks.noisy_neighbour", "--worker", str(index),
                       "--seed", str(self.seed), "--duration", f"{self.duration_s:g}",
                       "--min-s", f"{self.min_s:g}", "--max-s", f"{self.max_s:g}"]
            if self.log is not None:
                command += ["--log", str(self.log)]
            self._procs.append(subprocess.Popen(command, cwd=Path(__file__).resolve().parents[1],
                                                preexec_fn=die_with_parent))
        return self

    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self._procs]

    def stop(self) -> None:
        """End every worker by PID (SIGTERM, then SIGKILL after a grace period)."""
        for proc in self._procs:
            stop_process(proc, grace_s=2.0)
        self._procs.clear()

    def __enter__(self) -> NoisyNeighbour:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def busy_cores(log: Path, start: float, end: float) -> float:
    """Average number of cores the neighbour kept busy between two Unix times, from its log."""
    if not log.exists() or end <= start:
        return 0.0
    busy = 0.0
    for line in log.read_text(encoding="utf-8").splitlines():
        burst = json.loads(line)
        busy += max(0.0, min(end, burst["end"]) - max(start, burst["start"]))
    return busy / (end - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds before every worker stops")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--min-s", type=float, default=DEFAULT_MIN_S)
    parser.add_argument("--max-s", type=float, default=DEFAULT_MAX_S)
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker, args.seed, args.duration, args.min_s, args.max_s, args.log)
        return
    neighbour = NoisyNeighbour(cores=args.cores, duration_s=args.duration, seed=args.seed, min_s=args.min_s,
                               max_s=args.max_s, log=args.log).start()
    print(f"noisy neighbour: {args.cores} bursty worker(s) for {args.duration:g} s, PIDs {neighbour.pids}")
    try:
        for proc in neighbour._procs:
            proc.wait()
    finally:
        neighbour.stop()


if __name__ == "__main__":
    main()
