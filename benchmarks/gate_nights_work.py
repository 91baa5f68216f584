"""The work each install of the gate's nights really does: its quality nodes' CPU seconds per request.

A wall-clock time (the `infer_ms` a response carries) measures the machine as much as the model:
on a shared machine a request's wall time swings with whatever else runs, so a ratio of medians of
a few dozen of them can land anywhere (0.44 and 1.50 were both seen for one pair of installs).
The CPU time the quality node processes spend (the scheduler's count per thread, read before and
after each request, one request at a time) counts only the compute of that request, however crowded the
machine is. Both installs answer the same texts in turn; every answer must come from the quality
model, uncached and not degraded, or the measurement stops with a sentence saying what was served.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

__all__ = ["WorkMeasure", "measure_work_on", "process_cpu_s", "quality_cpu_reader", "served_by_quality"]

NIGHTLY_CHARS = 90
"""The nightly traffic's median request length (traffic_models/nightly.yaml), so the factor is the
one the gate's requests meet."""


def process_cpu_s(pid: int) -> float:
    """CPU seconds process `pid`'s live threads have run, to the nanosecond (the scheduler's own
    count in /proc/<pid>/task/*/schedstat; the tick-sampled utime of /proc/<pid>/stat moves 10 ms
    at a time, too coarse for requests of 30 ms)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text(encoding="ascii").split()[0])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended while it was read
    return total / 1e9


def quality_cpu_reader(url: str, client: httpx.Client) -> Callable[[], float]:
    """A reader of the CPU seconds of every quality node of the server at `url` (from /v1/status)."""
    nodes = client.get(f"{url}/v1/status", timeout=10.0).json()["nodes"]
    pids = [int(node["pid"]) for node in nodes if node.get("pool") == "quality" and node.get("pid")]
    if not pids:
        raise RuntimeError(f"The server at {url} lists no quality node process in /v1/status.")
    return lambda: sum(process_cpu_s(pid) for pid in pids)


def served_by_quality(answer: dict[str, object], url: str) -> None:
    """Refuse an answer that did not compute on the quality model (cached, degraded, another tier)."""
    if answer.get("model") != "quality" or answer.get("cached") or answer.get("degraded"):
        raise RuntimeError(f"The server at {url} answered a quality request with model {answer.get('model')!r}, "
                           f"cached {answer.get('cached')!r}, degraded {answer.get('degraded')!r}; the work "
                           "measurement needs every answer computed by the quality model.")


@dataclass(frozen=True)
class WorkMeasure:
    """Per install (baseline first): the median CPU ms and wall `infer_ms` per request; their ratios."""

    cpu_ms: tuple[float, float]
    wall_ms: tuple[float, float]
    requests: int

    @property
    def cpu_factor(self) -> float:
        return self.cpu_ms[1] / self.cpu_ms[0]

    @property
    def wall_factor(self) -> float:
        return self.wall_ms[1] / self.wall_ms[0]

    def as_record(self) -> dict[str, object]:
        return {"cpu_factor": round(self.cpu_factor, 3), "wall_factor": round(self.wall_factor, 3),
                "cpu_ms_per_request": [round(v, 2) for v in self.cpu_ms],
                "median_infer_ms": [round(v, 2) for v in self.wall_ms], "requests": self.requests}


def measure_work_on(urls: tuple[str, str], client: httpx.Client, readers: tuple[Callable[[], float], ...],
                    requests: int = 100, warmup: int = 20, chars: int = NIGHTLY_CHARS) -> WorkMeasure:
    """Send the same texts to both servers in turn, one at a time: `warmup` of them first, then
    `requests` whose CPU (each install's quality nodes, around its own request only) is compared
    by its median, which a few requests slowed by the machine's moments do not move."""
    cpu: tuple[list[float], list[float]] = ([], [])
    wall: tuple[list[float], list[float]] = ([], [])
    sentence = ("a sentence for the work measurement " * (chars // 36 + 1))[:chars]
    for i in range(warmup + requests):
        body = {"text": f"{i:05d} {sentence}"[:chars], "source_lang": "en", "target_lang": "de",
                "mode": "quality", "priority": "paid", "deadline_ms": 60000}
        for arm, url in enumerate(urls):
            before = readers[arm]()
            answer = client.post(f"{url}/v1/translate", json=body, timeout=60.0).json()
            used = readers[arm]() - before
            served_by_quality(answer, url)
            if i >= warmup:
                cpu[arm].append(1000.0 * used)
                wall[arm].append(float(answer["timing"]["infer_ms"]))
    medians = [float(np.median(values)) for values in cpu]
    if min(medians) <= 0.0:
        raise RuntimeError(f"The quality nodes used no measurable CPU time per request (medians {medians} ms); "
                           "the work cannot be compared.")
    return WorkMeasure(cpu_ms=(medians[0], medians[1]), wall_ms=(float(np.median(wall[0])), float(np.median(wall[1]))),
                       requests=requests)
