"""Base curves: the shape of an ordinary day, as multipliers of the base rate."""

from __future__ import annotations

import numpy as np

DAY_S = 86_400.0

NAMED_CURVES: dict[str, list[tuple[float, float]]] = {
    "flat": [(0.0, 1.0)],
    # A consumer service in one time zone: quiet night, morning climb, busy day, evening tail.
    "diurnal": [
        (0 * 3600.0, 0.35),
        (4 * 3600.0, 0.2),
        (7 * 3600.0, 0.45),
        (9 * 3600.0, 0.85),
        (12 * 3600.0, 1.0),
        (15 * 3600.0, 0.95),
        (18 * 3600.0, 0.85),
        (22 * 3600.0, 0.8),
        (23 * 3600.0, 0.55),
    ],
    # Office hours only: near-idle outside 08:00-18:00.
    "business-hours": [
        (0.0, 0.1),
        (7 * 3600.0, 0.1),
        (9 * 3600.0, 1.0),
        (17 * 3600.0, 1.0),
        (19 * 3600.0, 0.1),
    ],
}


def curve_points(curve: str | list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Clock times and multipliers of a named or explicit curve, sorted by time."""
    points = NAMED_CURVES[curve] if isinstance(curve, str) else curve
    times = np.array([p[0] for p in points], dtype=np.float64)
    values = np.array([p[1] for p in points], dtype=np.float64)
    order = np.argsort(times, kind="stable")
    return times[order], values[order]


def curve_values(times: np.ndarray, values: np.ndarray, clock: np.ndarray) -> np.ndarray:
    """Linear interpolation that wraps at midnight, so 23:00 -> 00:00 is smooth every day."""
    if times.size == 1:
        return np.full_like(clock, values[0], dtype=np.float64)
    return np.interp(np.mod(clock, DAY_S), times, values, period=DAY_S)
