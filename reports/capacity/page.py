"""capacity.html: the knee curve of a capacity search, per condition, and the capacity point.

Rendering only: it reads the capacity.json document (plain data) and draws three panels over
the offered rate — achieved rate, P50/P95/P99 with their 95% intervals against the latency SLO
lines, error and shed rates — with each condition's capacity marked, so "none" and "n-1" sit on
one set of axes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from rushhour.kernel.atomic import write_text_atomic
from rushhour.reports.charts.plotting import Chart, encode

__all__ = ["knee_chart", "write_capacity_html"]

PANEL_SIZE = (12.0, 3.6)
PERCENTILES = (("p50", ":"), ("p95", "--"), ("p99", "-"))


def _series(steps: list[dict[str, Any]], path: tuple[str, ...]) -> np.ndarray:
    values = []
    for step in steps:
        value: Any = step
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        values.append(np.nan if value is None else float(value))
    return np.asarray(values, dtype=float)


def _latency_panel(axes: Any, x: np.ndarray, steps: list[dict[str, Any]], color: str, label: str) -> None:
    for key, style in PERCENTILES:
        y = _series(steps, ("latency_ms", key, "value"))
        low = _series(steps, ("latency_ms", key, "ci_low"))
        high = _series(steps, ("latency_ms", key, "ci_high"))
        errors = np.vstack([np.clip(y - low, 0, None), np.clip(high - y, 0, None)])
        errors = np.nan_to_num(errors, nan=0.0)
        axes.errorbar(x, y, yerr=errors, ls=style, marker="o", ms=3, lw=1.1, capsize=2, color=color,
                      label=f"{key.upper()} {label}")


def knee_chart(document: dict[str, Any]) -> Chart:
    """Achieved, percentiles and error rates against the offered rate, every condition overlaid."""
    figure, (rate_ax, lat_ax, err_ax) = plt.subplots(1, 3, figsize=PANEL_SIZE)
    top = 0.0
    for index, condition in enumerate(document.get("conditions") or []):
        steps, color, label = condition["steps"], f"C{index}", condition["condition"]
        x = _series(steps, ("offered_rps",))
        if not x.size:
            continue
        top = max(top, float(np.nanmax(x)))
        rate_ax.plot(x, _series(steps, ("achieved_rps",)), marker="o", ms=3, color=color, label=label)
        _latency_panel(lat_ax, x, steps, color, label)
        err_ax.plot(x, 100 * _series(steps, ("error_rate",)), marker="o", ms=3, color=color, label=f"errors {label}")
        err_ax.plot(x, 100 * _series(steps, ("shed_rate",)), marker="x", ms=4, ls=":", color=color,
                    label=f"shed {label}")
        if condition.get("capacity_rps") is not None:
            for axes in (rate_ax, lat_ax, err_ax):
                axes.axvline(condition["capacity_rps"], color=color, ls="--", lw=0.8, alpha=0.7)
    rate_ax.plot([0, top], [0, top], color="grey", lw=0.8, ls=":", label="achieved = offered")
    for slo in document.get("slos") or []:
        if slo.get("kind") == "latency" and slo.get("threshold_ms"):
            lat_ax.axhline(float(slo["threshold_ms"]), color="black", lw=0.7, ls="-.")
            lat_ax.annotate(slo["name"], xy=(0.01, float(slo["threshold_ms"])), xycoords=("axes fraction", "data"),
                            fontsize=6, va="bottom")
    lat_ax.set_yscale("log")
    for axes, ylabel in ((rate_ax, "achieved (req/s)"), (lat_ax, "latency (ms, log)"), (err_ax, "% of requests")):
        axes.set_xlabel("offered (req/s)")
        axes.set_ylabel(ylabel)
        axes.grid(alpha=0.3, which="both")
        axes.legend(fontsize=6)
    figure.tight_layout()
    return Chart("knee", "Knee curve", encode(figure))


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("rushhour.reports", "templates"), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    return env


def render_capacity_html(document: dict[str, Any]) -> str:
    """The whole page as text (charts embedded, no other file needed)."""
    chart = knee_chart(document) if any(c["steps"] for c in document.get("conditions") or []) else None
    return _environment().get_template("capacity.html.j2").render(d=document, chart=chart)


def write_capacity_html(document: dict[str, Any], path: Path) -> Path:
    write_text_atomic(render_capacity_html(document), path)
    return path
