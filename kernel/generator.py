"""The load generator's health, derived once: its schedule lag, and whether it kept the load open-loop.

A generator quietly stops measuring what users feel when it sends late (schedule lag: sent minus
intended), when its requests queue for a free connection (pool wait: the run has turned
closed-loop), when it fires a row twice, or when its CPU is saturated. A drill's report, a
capacity step, the harness-overhead measurement and the live view all take the lag from
`schedule_lag_s`/`schedule_lag_ms` and the verdict on those figures from `generator_problems`;
each words the problems its own way. No pandas here: any table with `sent_s` and `intended_s`
columns (a pandas frame, an Arrow table's columns, a mapping of arrays) will do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["CPU_SATURATED", "GeneratorProblem", "generator_problems", "schedule_lag_ms", "schedule_lag_s"]

CPU_SATURATED = 0.95
"""The generator's CPU share at or above which its timing is not trusted."""


def schedule_lag_s(requests: Mapping[str, Any] | Any) -> np.ndarray:
    """Each request's schedule lag in seconds: when it went out minus when the schedule meant it
    to (NaN for one never sent)."""
    return np.asarray(requests["sent_s"], dtype=float) - np.asarray(requests["intended_s"], dtype=float)


def schedule_lag_ms(requests: Mapping[str, Any] | Any) -> np.ndarray:
    """`schedule_lag_s` in milliseconds."""
    return schedule_lag_s(requests) * 1000.0


@dataclass(frozen=True)
class GeneratorProblem:
    """One reason the generator's measurement is not trusted: which check, the value, its limit."""

    check: Literal["lag", "pool_wait", "duplicates", "cpu"]
    value: float
    limit: float


def generator_problems(*, lag_p99_ms: float | None, pool_wait_p99_ms: float | None, duplicates: int | None,
                       cpu_max: float | None, max_lag_p99_ms: float,
                       cpu_saturated: float = CPU_SATURATED) -> list[GeneratorProblem]:
    """The generator's figures judged: lag and connection-wait P99 above the lag limit, any row fired
    more than once, CPU at or above saturation; a figure that is None was not measured and passes."""
    checks: list[tuple[Literal["lag", "pool_wait", "duplicates", "cpu"], float | None, float, bool]] = [
        ("lag", lag_p99_ms, max_lag_p99_ms, lag_p99_ms is not None and lag_p99_ms > max_lag_p99_ms),
        ("pool_wait", pool_wait_p99_ms, max_lag_p99_ms,
         pool_wait_p99_ms is not None and pool_wait_p99_ms > max_lag_p99_ms),
        ("duplicates", duplicates, 0, bool(duplicates)),
        ("cpu", cpu_max, cpu_saturated, cpu_max is not None and cpu_max >= cpu_saturated),
    ]
    return [GeneratorProblem(check, float(value), limit) for check, value, limit, bad in checks
            if bad and value is not None]
