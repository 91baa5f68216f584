"""How the report writes numbers: one formatter per unit, shared by the templates and findings."""

from __future__ import annotations

import numpy as np

__all__ = ["DASH", "budget", "format_sig", "ms", "num", "pct", "secs", "usd", "window_text"]

DASH = "—"


def num(value: float | None, digits: int = 2) -> str:
    return DASH if value is None else f"{value:,.{digits}f}"


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal: 0.924 -> "92.4%", 7.57 -> "757.0%"."""
    return DASH if value is None else f"{100 * value:.1f}%"


def budget(value: float | None) -> str:
    """Error budget consumed: one decimal below 100%, whole percent above (7.57 -> "757%")."""
    if value is None:
        return DASH
    return f"{100 * value:.0f}%" if value >= 1 else f"{100 * value:.1f}%"


def format_sig(value: float | None, digits: int = 4) -> str:
    """Significant digits without exponents: 0.00000547, 708.5, 12,345."""
    if value is None:
        return DASH
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    return np.format_float_positional(value, precision=digits, unique=False, fractional=False, trim="-")


def usd(value: float | None) -> str:
    if value is None:
        return DASH
    if abs(value) >= 1:
        return f"${value:,.2f}"
    return "$" + format_sig(value, 3)


def secs(value: float) -> str:
    """Run seconds with at most one decimal: 131.0 -> "131", 139.25 -> "139.2"."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def ms(value: float | None) -> str:
    """Milliseconds, grouped: 38412.3 -> "38,412 ms"; under 10 ms keeps a decimal."""
    if value is None:
        return DASH
    return f"{value:,.1f} ms" if abs(value) < 10 else f"{value:,.0f} ms"


def window_text(start_s: float | None, end_s: float | None) -> str:
    """"131.7–139.2 s", or "" when the window is unknown."""
    return "" if start_s is None or end_s is None else f"{secs(start_s)}–{secs(end_s)} s"
