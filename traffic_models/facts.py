"""What a run needs to know about its whole schedule, gathered a chunk at a time.

Pandas only reaches here as the chunks' type: the load generator's processes import this module
(through their settings) and do without pandas.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LABEL_COLUMNS", "PEAK_BIN_S", "ScheduleFacts"]

LABEL_COLUMNS = ("priority", "kind", "mode", "phase")
"""The bounded labels a run's live figures are grouped by."""
PEAK_BIN_S = 5.0


@dataclass
class ScheduleFacts:
    """What a run needs to know about its whole schedule, gathered a chunk at a time: how many
    rows, the peak arrival rate over PEAK_BIN_S bins, the longest deadline and every label group."""

    count: int = 0
    longest_deadline_ms: float = 0.0
    labels: tuple[tuple[str, ...], ...] = ()
    _bins: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)

    @classmethod
    def of(cls, chunks: Iterable[pd.DataFrame]) -> ScheduleFacts:
        facts = cls()
        for frame in chunks:
            facts.add(frame)
        return facts

    def add(self, frame: pd.DataFrame) -> None:
        """Fold in one chunk of rows."""
        if frame.empty:
            return
        self.count += len(frame)
        self.longest_deadline_ms = max(self.longest_deadline_ms, float(frame["deadline_ms"].max()))
        bins = np.bincount(np.floor(frame["offset_s"].to_numpy(dtype=float) / PEAK_BIN_S).astype(np.int64))
        if bins.size > self._bins.size:
            bins[: self._bins.size] += self._bins
            self._bins = bins
        else:
            self._bins[: bins.size] += bins
        seen = frame[list(LABEL_COLUMNS)].astype(str).drop_duplicates().itertuples(index=False, name=None)
        self.labels = tuple(sorted(set(self.labels) | set(seen)))

    @property
    def peak_rps(self) -> float:
        """Highest arrival rate over any PEAK_BIN_S bin (requests per second; 0 when empty)."""
        return float(self._bins.max()) / PEAK_BIN_S if self._bins.size else 0.0
