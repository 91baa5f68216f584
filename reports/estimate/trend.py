"""A straight-line trend through time-ordered points, with a slope interval that holds when
neighbouring points are correlated.

Windows of a soak run are not independent: a slow hour is followed by another slow hour, so
the plain least-squares standard error understates how far the slope can wander (with AR(1)
correlation 0.8 between windows, a nominal 2.5% one-sided error becomes about 20%). The slope's
standard error is widened by the AR(1) factor (1 + r) / (1 - r) and the Student t quantile takes
the effective number of points, n (1 - r) / (1 + r), less two, as its degrees of freedom.

r is the lag-1 correlation of the residuals, which on a dozen points is strongly biased down
(detrending eats the correlation). It is first corrected for that bias, (2 + 4 r) / n, then
raised by `UPPER_MARGIN` standard errors (sqrt((1 - r^2) / n)): on the bench
(benchmarks/aux_truth.py) a point estimate, even bias-corrected, still lets false fails reach
5–8% at correlation 0.5–0.8 with twelve windows, while this margin keeps them at or under 2.5%
up to 0.8. The price is width: with independent windows the interval is about twice the plain one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

__all__ = ["METHOD", "MIN_POINTS", "Trend", "trend_interval"]

METHOD = "least squares, slope error widened for lag-1 correlation of the residuals (upper bound)"
MIN_POINTS = 3
UPPER_MARGIN = 1.25  # standard errors of r added to the bias-corrected estimate
MAX_LAG1 = 0.97


@dataclass(frozen=True)
class Trend:
    """The slope (per unit of x) with its interval, the intercept, points used, the lag-1
    correlation charged, and the effective number of independent points behind the interval."""

    slope: float | None
    low: float | None
    high: float | None
    intercept: float | None
    points: int
    lag1: float | None
    effective_points: float | None
    method: str = METHOD

    @property
    def trusted(self) -> bool:
        return self.slope is not None

    def as_dict(self) -> dict[str, float | int | str | None]:
        return asdict(self)


def trend_interval(x: np.ndarray, y: np.ndarray, confidence: float) -> Trend:
    """The least-squares line through the finite (x, y) and the slope's two-sided interval;
    an untrusted Trend (slope None) with fewer than MIN_POINTS points or a single x."""
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n < MIN_POINTS or np.ptp(x) == 0:
        return Trend(None, None, None, None, n, None, None)
    dx, dy = x - x.mean(), y - y.mean()
    sxx = float(dx @ dx)
    slope = float(dx @ dy) / sxx
    residual = dy - slope * dx
    stderr = math.sqrt(float(residual @ residual) / (n - 2) / sxx) if n > 2 else 0.0
    r = charged_lag1(residual)
    widen = (1.0 + r) / (1.0 - r)
    effective = n / widen
    t = float(special.stdtrit(max(1.0, effective - 2.0), 0.5 + confidence / 2.0))
    half = t * stderr * math.sqrt(widen)
    return Trend(slope, slope - half, slope + half, float(y.mean() - slope * x.mean()), n, r, effective)


def charged_lag1(residual: np.ndarray) -> float:
    """The lag-1 correlation charged to a trend: the residuals' own, bias-corrected, plus a
    margin of UPPER_MARGIN standard errors, within [0, MAX_LAG1]."""
    n = residual.size
    total = float(residual @ residual)
    raw = float(residual[1:] @ residual[:-1]) / total if total > 0 else 0.0
    corrected = raw + (2.0 + 4.0 * max(raw, 0.0)) / n
    upper = corrected + UPPER_MARGIN * math.sqrt(max(1.0 - min(corrected, 1.0) ** 2, 0.0) / n)
    return float(min(max(upper, 0.0), MAX_LAG1))
