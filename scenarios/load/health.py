"""The load generator's own health, read from the merged requests: did it keep its schedule?

Three ways a generator quietly stops being open-loop: it starts requests late (schedule lag), it
starts them on time but they queue for a free connection (pool wait: a stalled target has taken
every pooled connection, and the run has turned closed-loop), or it fires a row twice. The runner
records these figures in its `generator` event; the report judges them against the lag limit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rushhour.kernel.generator import schedule_lag_ms
from rushhour.kernel.quantiles import percentile_or_none
from rushhour.scenarios.load.parts import duplicate_count

__all__ = ["generator_figures"]


def generator_figures(requests: pd.DataFrame) -> dict[str, float | int | None]:
    """Lag P99 (sent - intended), connection-wait P99 and maximum, rows that never got a
    connection, and rows fired more than once; percentiles are None when nothing was sent."""
    lag_ms = schedule_lag_ms(requests)
    wait_ms = _column(requests, "pool_wait_ms")
    started = requests["fired"].to_numpy() > 0 if "fired" in requests.columns else np.isfinite(wait_ms)
    return {
        "lag_p99_ms": _p99(lag_ms),
        "pool_wait_p99_ms": _p99(wait_ms),
        "pool_wait_max_ms": float(np.nanmax(wait_ms)) if np.isfinite(wait_ms).any() else None,
        "never_connected": int((started & np.isnan(requests["sent_s"].to_numpy(dtype=float))).sum()),
        "duplicates": duplicate_count(requests),
    }


def _column(requests: pd.DataFrame, name: str) -> np.ndarray:
    if name not in requests.columns:
        return np.full(len(requests), np.nan)
    return requests[name].to_numpy(dtype=float)


def _p99(values: np.ndarray) -> float | None:
    value = percentile_or_none(values, 99)
    return None if value is None else round(value, 3)
