"""build_reports: the one call that turns a results directory into every report file."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel.atomic import write_json_atomic
from kernel.contract import SUMMARY_FILE, ExitCode
from reports.baselines import load_baselines
from reports.charts import all_charts
from reports.compare import compare_loaded
from reports.facts import RunFacts
from reports.findings import find, headline
from reports.gate import DEFAULT_POPULATION, GatePopulation
from reports.live import live_section
from reports.periods import fault_periods, period_length
from reports.render import write_reports
from reports.results import RunData, load_run
from reports.summary import summarise

EXIT_CODES = {"pass": ExitCode.OK, "fail": ExitCode.FAILED, "invalid": ExitCode.INVALID}


def build_reports(results_dir: Path, *, baseline: Path | Sequence[Path] | None = None,
                  paired: bool | None = None, population: GatePopulation = DEFAULT_POPULATION) -> dict[str, Any]:
    """Read the results, write summary.json, report.html, report.md, junit.xml; return the summary.

    `baseline` is one run, a directory of runs, or several (reports.baselines); `paired` and
    `population` are passed to the gate (reports.compare). Raises reports.results.ResultsError
    when a required file is missing or malformed, or a paired comparison meets another schedule.
    """
    root = Path(results_dir)
    run = load_run(root)
    facts = RunFacts.of(run)  # fault windows, phases, judged SLOs: derived once, read by every step
    summary = summarise(run, facts)
    add_story(run, summary, facts)
    summary["live"] = live_section(run.events)  # metrics endpoint and wall-clock window
    if baseline is not None:
        summary["comparison"] = compare_loaded(load_baselines(baseline), run, paired=paired,
                                               population=population).as_dict()
    charts = all_charts(run, facts.windows)
    write_json_atomic(_json_safe(summary), root / SUMMARY_FILE)
    write_reports(root, summary, charts)
    return summary


def add_story(run: RunData, summary: dict[str, Any], facts: RunFacts) -> None:
    """Before/during/after per fault, the findings, and the one-line headline, into `summary`."""
    windows = facts.windows
    width = period_length(run.duration_s)
    summary["fault_period_s"] = width
    for fault, window in zip(summary["faults"], windows):
        fault["periods"] = fault_periods(run.requests, window, windows, run.duration_s, width)
    summary["findings"] = find(run, summary)
    summary["headline"] = headline(summary)


def exit_code(summary: dict[str, Any]) -> int:
    """0 pass, 1 SLO missed or regression against the baseline, 3 invalid measurement."""
    code = EXIT_CODES[summary["verdict"]]
    comparison = summary.get("comparison")
    if code == 0 and comparison and comparison["verdict"] == "regression":
        return 1
    return code


def _json_safe(value: Any) -> Any:
    """Strict JSON: NaN and infinities become null (json.dumps would write bare NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value
