"""build_reports: the one call that turns a results directory into every report file."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rushhour.kernel.atomic import write_json_atomic
from rushhour.kernel.contract import SUMMARY_FILE, ExitCode
from rushhour.reports.charts.catalog import all_charts
from rushhour.reports.gate.baselines import load_baselines
from rushhour.reports.gate.compare import compare_loaded
from rushhour.reports.gate.population import DEFAULT_POPULATION, GatePopulation
from rushhour.reports.large import is_large, load_narrow, summarise_large
from rushhour.reports.measures.facts import RunFacts
from rushhour.reports.measures.live import live_section
from rushhour.reports.measures.overhead import flag_tight_slos, overhead_section
from rushhour.reports.measures.periods import fault_periods, period_length
from rushhour.reports.render.pages import write_reports
from rushhour.reports.rundata.results import RunData, load_run
from rushhour.reports.summary.aggregate import summarise
from rushhour.reports.summary.findings import find, headline
from rushhour.reports.summary.model import Summary

EXIT_CODES = {"pass": ExitCode.OK, "fail": ExitCode.FAILED, "invalid": ExitCode.INVALID}


def build_reports(results_dir: Path, *, baseline: Path | Sequence[Path] | None = None,
                  paired: bool | None = None, population: GatePopulation = DEFAULT_POPULATION) -> dict[str, Any]:
    """Read the results, write summary.json, report.html, report.md, junit.xml; return the summary.

    `baseline` is one run, a directory of runs, or several (rushhour.reports.gate.baselines); `paired` and
    `population` are passed to the gate (rushhour.reports.gate.compare). A run over `rushhour.reports.large.LARGE_ROWS`
    requests (and no baseline) is summarised from a narrow projection of its columns. Raises
    rushhour.reports.rundata.results.ResultsError when a required file is missing or malformed, or a paired
    comparison meets another schedule.
    """
    root = Path(results_dir)
    if baseline is None and is_large(root):  # too many rows for pandas: the verdict's columns only
        summary = summarise_large(load_narrow(root))
        write_json_atomic(_json_safe(summary), root / SUMMARY_FILE)
        write_reports(root, summary, [])
        return summary
    run = load_run(root)
    facts = RunFacts.of(run)  # fault windows, phases, judged SLOs: derived once, read by every step
    summary = summarise_run(run, facts, baseline=baseline, paired=paired, population=population).as_dict()
    write_json_atomic(_json_safe(summary), root / SUMMARY_FILE)
    steady = [(w.steady_start_s, w.end_s) for w in facts.steady if w.steady_start_s is not None]
    write_reports(root, summary, all_charts(run, facts.windows, steady))
    return summary


def summarise_run(run: RunData, facts: RunFacts, *, baseline: Path | Sequence[Path] | None = None,
                  paired: bool | None = None, population: GatePopulation = DEFAULT_POPULATION) -> Summary:
    """The one pipeline that makes a summary: sections, then the story told from them, then the
    live-metrics window and the comparison; validated as a whole (rushhour.reports.summary.model)."""
    sections = summarise(run, facts)
    overhead = overhead_section(run.events, sections["latency_ms"], sections["slos"])
    if overhead is not None:
        sections |= {"harness_overhead": overhead, "slos": flag_tight_slos(sections["slos"], overhead)}
    parts = {**sections, **story(run, sections, facts), "live": live_section(run.events)}
    if baseline is not None:
        parts["comparison"] = compare_loaded(load_baselines(baseline), run, paired=paired,
                                             population=population).as_dict()
    return Summary.model_validate(parts)


def story(run: RunData, sections: dict[str, Any], facts: RunFacts) -> dict[str, Any]:
    """Before/during/after per fault, the findings and the one-line headline, told from the sections."""
    width = period_length(run.duration_s)
    faults = [{**fault, "periods": fault_periods(run.requests, window, facts.windows, run.duration_s, width)}
              for fault, window in zip(sections["faults"], facts.windows)]
    told: dict[str, Any] = {"faults": faults, "fault_period_s": width}
    told["findings"] = find(run, {**sections, **told})
    told["headline"] = headline({**sections, **told})
    return told


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
