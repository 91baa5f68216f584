"""Policy comparison: the same drill under several server configs, side by side.

Each variant's results directory already has its summary.json (the normal report); this module
adds what a side-by-side needs from the raw files (P99 in the busiest phase, node-hours per
pool), names the cheapest variant that met every SLO, and writes comparison.json/.html/.md.
"Cheapest" is the lowest total cost of the run: every variant replayed the same schedule, so
total dollars compare like for like; ties go to the lower cost per 1k characters.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from rushhour.kernel.atomic import write_text_atomic
from rushhour.kernel.contract import SUMMARY_FILE
from rushhour.reports.build import _json_safe
from rushhour.reports.estimate.intervals import percentile_of
from rushhour.reports.measures.cost import node_intervals, node_seconds
from rushhour.reports.render.pages import template_environment
from rushhour.reports.rundata.attempts import attempt_values
from rushhour.reports.rundata.results import ResultsError, RunData, load_run, read_text
from rushhour.reports.rundata.selection import phase_labels
from rushhour.reports.rundata.window import schedule_window
from rushhour.reports.variants_model import ComparisonDocument

__all__ = ["cheapest_passing", "comparison_dict", "read_comparison", "render_comparison_html", "render_comparison_md",
           "variant_row", "write_comparison"]


def peak_phase(run: RunData) -> str | None:
    """The phase with the highest scheduled arrival rate (None when the run has no phases).

    A phase's length comes from its `phase` event; an aborted run never wrote the later ones,
    so for those the span of the phase's own intended send times stands in."""
    events = run.events_of("phase")
    labels = phase_labels(run.requests, events)
    named = labels != ""
    if not named.any():
        return None
    times = run.requests.loc[named, "intended_s"].groupby(labels[named]).agg(["size", "min", "max"])
    bounds = {str(e["name"]): (float(e["start_s"]), float(e["end_s"])) for e in events
              if e.get("end_s") is not None and e.get("start_s") is not None}
    starts = times.index.map(lambda name: bounds.get(str(name), (np.nan, np.nan))[0]).to_numpy(float)
    ends = times.index.map(lambda name: bounds.get(str(name), (np.nan, np.nan))[1]).to_numpy(float)
    spans = np.where(np.isnan(ends), times["max"] - times["min"], ends - starts)
    rates = times["size"].to_numpy(float) / np.maximum(spans, 1e-3)
    return str(times.index[int(np.argmax(rates))])


def phase_p99(run: RunData, phase: str | None) -> float | None:
    """P99 latency (from intended send) of the attempted requests in `phase`, or of all when None.

    Failures count at the moment they ended (rushhour.reports.rundata.attempts)."""
    requests = run.requests
    latency = attempt_values(requests)
    if phase is not None:
        latency = latency[(phase_labels(requests, run.events_of("phase")) == phase).to_numpy()]
    return percentile_of(latency, 99.0).value


def node_hours(run: RunData) -> dict[str, float]:
    """Node-hours per pool over the schedule window, from the scraped `nodes_alive`."""
    metrics = run.metrics
    if metrics is None or not {"pool", "nodes_alive"} <= set(metrics.columns):
        return {}
    seconds = node_seconds(node_intervals(metrics), *schedule_window(run))
    return {pool: value / 3600.0 for pool, value in seconds.items()}


def variant_row(name: str, root: Path) -> dict[str, Any]:
    """One row of the comparison, from a variant's results directory and its summary.json."""
    row: dict[str, Any] = {"name": name, "results_dir": str(root), "verdict": "invalid", "verdict_reason": ""}
    try:
        summary = json.loads(read_text(root / SUMMARY_FILE))
        run = load_run(root)
    except (OSError, json.JSONDecodeError, ResultsError) as exc:
        return row | {"verdict_reason": f"no usable results: {exc}", "slos": [], "requests": None, "p99_ms": None,
                      "peak_phase": None, "p99_peak_ms": None, "faults": [], "node_hours": {}, "total_usd": None,
                      "usd_per_1k_chars": None}
    phase = peak_phase(run)
    cost = summary.get("cost") or {}
    return row | {
        "verdict": summary["verdict"], "verdict_reason": summary.get("verdict_reason", ""),
        "slos": [{"name": s["name"], "met": bool(s["met"]), "measured": s.get("measured"), "kind": s.get("kind"),
                  "objective_text": s.get("objective_text", "")} for s in summary.get("slos", [])],
        "requests": summary.get("requests", {}),
        "p99_ms": (summary.get("latency_ms") or {}).get("p99"),
        "peak_phase": phase, "p99_peak_ms": phase_p99(run, phase),
        "faults": [{"name": f["name"], "recovered": f.get("recovered"), "recovery_s": f.get("recovery_s"),
                    "failed_requests": f.get("failed_requests")} for f in summary.get("faults", [])],
        "node_hours": node_hours(run),
        "total_usd": cost.get("total_usd"), "usd_per_1k_chars": cost.get("usd_per_1k_chars"),
    }


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else math.inf


def cheapest_passing(rows: list[dict[str, Any]]) -> str | None:
    """The passing variant with the lowest total cost (then cost per 1k chars, then node-hours)."""
    passing = [row for row in rows if row["verdict"] == "pass"]
    if not passing:
        return None
    best = min(passing, key=lambda r: (_finite(r.get("total_usd")), _finite(r.get("usd_per_1k_chars")),
                                       sum((r.get("node_hours") or {}).values())))
    return str(best["name"])


def comparison_dict(top: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The comparison.json content: rows, the cheapest passing variant, and the column sets."""
    pools = sorted({pool for row in rows for pool in row.get("node_hours", {})})
    slo_names = list(dict.fromkeys(s["name"] for row in rows for s in row.get("slos", [])))
    faults = list(dict.fromkeys(f["name"] for row in rows for f in row.get("faults", [])))
    cheapest = cheapest_passing(rows)
    return {
        "results_dir": str(top), "variants": rows, "pools": pools, "slo_names": slo_names,
        "fault_names": faults, "passed": [row["name"] for row in rows if row["verdict"] == "pass"],
        "cheapest_passing": cheapest,
        "conclusion": (f'"{cheapest}" is the cheapest variant that met every SLO.' if cheapest
                       else "No variant met every SLO."),
    }


def _lookups(comparison: dict[str, Any]) -> dict[str, Any]:
    """Per row: SLOs and faults keyed by name, so the templates can fill fixed columns."""
    return {row["name"]: {"slos": {s["name"]: s for s in row.get("slos", [])},
                          "faults": {f["name"]: f for f in row.get("faults", [])}}
            for row in comparison["variants"]}


def render_comparison_html(comparison: dict[str, Any]) -> str:
    return template_environment().get_template("variants.html.j2").render(c=comparison, by=_lookups(comparison))


def render_comparison_md(comparison: dict[str, Any]) -> str:
    return template_environment(markdown=True).get_template("variants.md.j2").render(c=comparison, by=_lookups(comparison))


def write_comparison(top: Path, variants: list[tuple[str, Path]]) -> dict[str, Any]:
    """Read every variant's results and write comparison.json, .html and .md into `top`."""
    top = Path(top)
    top.mkdir(parents=True, exist_ok=True)
    rows = [variant_row(name, root) for name, root in variants]
    comparison = ComparisonDocument.model_validate(_json_safe(comparison_dict(top, rows))).as_dict()
    write_text_atomic(json.dumps(comparison, indent=2) + "\n", top / "comparison.json")
    write_text_atomic(render_comparison_html(comparison), top / "comparison.html")
    write_text_atomic(render_comparison_md(comparison), top / "comparison.md")
    return comparison


def read_comparison(path: Path) -> ComparisonDocument:
    """comparison.json parsed through its model; ResultsError naming the file when it is not one."""
    try:
        return ComparisonDocument.model_validate_json(read_text(Path(path)))
    except ValidationError as exc:
        raise ResultsError(f'"{path}" is not a valid comparison.json: {_first_error(exc)}.') from exc


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return f"{'.'.join(str(p) for p in error['loc']) or '(top level)'}: {error['msg']}"
