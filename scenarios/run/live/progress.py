"""Live view of a running drill: a running tally of finished requests and the progress line.

The tally folds in the workers' part rows as they arrive, so the runner pays for one parquet
read per second, and the stop conditions (`rushhour.scenarios.run.stopping`) judge exactly what the
operator sees on the progress line. It keeps counters, a log-bucket histogram and a ring of
time bins (`rushhour.scenarios.run.live.hist`), never one entry per request, so a soak's harness stays
the same size however long it runs.
"""

from __future__ import annotations

import sys
from typing import TextIO

import numpy as np
import pandas as pd

from rushhour.scenarios.run.live.hist import LogHistogram, TimeRing

MIN_WINDOW_SAMPLES = 5
BIN_S = 0.1
SPAN_S = 3600.0
"""Windows of the rate and the stop conditions are resolved to 0.1 s and reach back an hour at most."""


class RunningTally:
    """Accumulates finished requests as they arrive from the workers, in bounded memory."""

    def __init__(self, *, span_s: float = SPAN_S) -> None:
        self.count = 0
        self.errors = 0
        self._latency_ms = LogHistogram(lo=1e-3, hi=1e8)
        self._ring = TimeRing(bin_s=BIN_S, span_s=span_s, shape=(2,))  # [ended, failed]
        self.cpu_samples: list[float] = []

    def add(self, parts: pd.DataFrame) -> None:
        """Fold in part rows: event time is the reply time, or the intended time if none came."""
        if parts.empty:
            return
        done = parts["done_s"].to_numpy(dtype=float)
        intended = parts["intended_s"].to_numpy(dtype=float)
        when = np.where(np.isnan(done), intended, done)
        status = parts["status"].to_numpy()
        failed = (status < 200) | (status >= 300)
        self.count += int(when.size)
        self.errors += int(failed.sum())
        self._latency_ms.observe((done - intended) * 1000.0)
        self._ring.add(when, (np.zeros(when.size, dtype=np.int64),))
        self._ring.add(when[failed], (np.ones(int(failed.sum()), dtype=np.int64),))

    def p99_ms(self) -> float:
        """P99 of the answered requests' latency, within 1% (`LogHistogram`)."""
        return self._latency_ms.percentile(99)

    def rate(self, now_s: float, window_s: float = 5.0) -> float:
        """Finished requests per second over the last `window_s`."""
        return float(self._ring.window(now_s, window_s)[0]) / window_s

    def error_rate(self, now_s: float, window_s: float) -> float | None:
        """Share of failures finishing in the window (None with too few to judge)."""
        ended, failed = self._ring.window(now_s, window_s)
        if ended < MIN_WINDOW_SAMPLES:
            return None
        return float(failed / ended)


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
