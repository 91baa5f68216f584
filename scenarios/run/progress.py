"""Live view of a running drill: a running tally of finished requests and the progress line.

The tally folds in the workers' part rows as they arrive, so the runner pays for one parquet
read per second, and the stop conditions (`scenarios.run.stopping`) judge exactly what the
operator sees on the progress line.
"""

from __future__ import annotations

import sys
from typing import TextIO

import numpy as np
import pandas as pd

from kernel.quantiles import percentile_value

MIN_WINDOW_SAMPLES = 5


class RunningTally:
    """Accumulates finished requests as they arrive from the workers."""

    def __init__(self) -> None:
        self._times = np.empty(0)
        self._failed = np.empty(0, dtype=bool)
        self._latency = np.empty(0)
        self.cpu_samples: list[float] = []

    def add(self, parts: pd.DataFrame) -> None:
        """Fold in part rows: event time is the reply time, or the intended time if none came."""
        if parts.empty:
            return
        done = parts["done_s"].to_numpy(dtype=float)
        when = np.where(np.isnan(done), parts["intended_s"].to_numpy(dtype=float), done)
        status = parts["status"].to_numpy()
        self._times = np.concatenate([self._times, when])
        self._failed = np.concatenate([self._failed, (status < 200) | (status >= 300)])
        self._latency = np.concatenate([self._latency, (done - parts["intended_s"].to_numpy(dtype=float)) * 1000.0])

    @property
    def count(self) -> int:
        return int(self._times.size)

    @property
    def errors(self) -> int:
        return int(self._failed.sum())

    def p99_ms(self) -> float:
        answered = self._latency[~np.isnan(self._latency)]
        return percentile_value(answered, 99)

    def rate(self, now_s: float, window_s: float = 5.0) -> float:
        """Finished requests per second over the last `window_s`."""
        recent = (self._times > now_s - window_s) & (self._times <= now_s)
        return float(recent.sum()) / window_s

    def error_rate(self, now_s: float, window_s: float) -> float | None:
        """Share of failures finishing in the window (None with too few to judge)."""
        inside = (self._times > now_s - window_s) & (self._times <= now_s)
        if inside.sum() < MIN_WINDOW_SAMPLES:
            return None
        return float(self._failed[inside].mean())


def progress_line(stats: RunningTally, *, elapsed_s: float, total_s: float, scheduled: int) -> str:
    p99 = stats.p99_ms()
    p99_text = "-" if np.isnan(p99) else f"{p99:,.0f} ms"
    return (f"[{elapsed_s:5.0f}/{total_s:.0f} s] {stats.count}/{scheduled} done  "
            f"{stats.rate(elapsed_s):5.1f} req/s  P99 {p99_text}  errors {stats.errors}")


class ProgressPrinter:
    """One line on stderr, redrawn in place on a terminal, printed every 10 s otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()
        self._last_plain = -1e9

    def show(self, line: str, elapsed_s: float) -> None:
        if self._tty:
            self._stream.write("\r\x1b[2K" + line)
        elif elapsed_s - self._last_plain >= 10.0:
            self._stream.write(line + "\n")
            self._last_plain = elapsed_s
        self._stream.flush()

    def close(self) -> None:
        if self._tty:
            self._stream.write("\n")
            self._stream.flush()
