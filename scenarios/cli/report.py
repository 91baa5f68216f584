"""`rushhour report` and `rushhour compare`: thin click wrappers around build_reports/compare_runs."""

from __future__ import annotations

from pathlib import Path

import click

from rushhour.kernel.contract import (
    AB_HTML_FILE,
    AB_JSON_FILE,
    AB_MD_FILE,
    EVENTS_FILE,
    JUNIT_FILE,
    REPORT_HTML_FILE,
    REPORT_MD_FILE,
    SCENARIO_FILE,
    SUMMARY_FILE,
)
from rushhour.kernel.safetext import terminal_text
from rushhour.scenarios.cli.errors import BadInput, finite

DIR = click.Path(path_type=Path, file_okay=False)
REPORT_OUTPUTS = (SUMMARY_FILE, REPORT_HTML_FILE, REPORT_MD_FILE, JUNIT_FILE, AB_JSON_FILE, AB_HTML_FILE, AB_MD_FILE)
"""What `rushhour report` writes into a results folder (a killed run's rebuild also writes its parquet
files, through the same link-refusing writer)."""


@click.command()
@click.argument("results_dir", type=DIR)
@click.option("--baseline", type=DIR, default=None, help="Results directory to compare against.")
def report(results_dir: Path, baseline: Path | None) -> None:
    """(Re)render the report of a finished run; exit code is the verdict.

    Writes summary.json, report.html, report.md and junit.xml into RESULTS_DIR (for a `rushhour ab`
    run: ab.json, ab.html, ab.md and junit.xml, exit code from its verdict). A run whose
    harness died before writing its results (killed) is rebuilt first from the part files and
    the schedule it left; its verdict is then "invalid".
    Exit 0 pass, 1 SLO missed or regression, 2 bad input, 3 measurement invalid.
    """
    from rushhour.reports.build import build_reports, exit_code
    from rushhour.reports.rundata.results import ResultsError
    from rushhour.scenarios.run.rebuild import rebuild_results

    _refuse_linked_outputs(results_dir)
    _check_text_files(results_dir)
    rebuilt = rebuild_results(results_dir) if results_dir.is_dir() else None
    if rebuilt is not None:
        click.echo(f"rebuilt the results of an interrupted run: {rebuilt.recorded} answered request(s) from "
                   f"{rebuilt.parts} part file(s); {rebuilt.survivors} process(es) of the run still alive", err=True)
    if results_dir.is_dir() and baseline is None:
        _report_ab(results_dir)
    try:
        summary = build_reports(results_dir, baseline=baseline)
    except ResultsError as exc:
        raise BadInput(str(exc)) from exc
    click.echo(terminal_text(f"{summary['verdict'].upper()}: {summary['verdict_reason']}"))
    if summary.get("comparison"):
        click.echo(terminal_text(f"baseline: {summary['comparison']['reason']}"))
    click.echo(f"report: {results_dir / REPORT_HTML_FILE}")
    raise SystemExit(exit_code(summary))


def _refuse_linked_outputs(results_dir: Path) -> None:
    """Refuse, before anything is rebuilt, a folder where a file the report writes is a link."""
    from rushhour.kernel.atomic import LinkedOutputError, refuse_linked_outputs

    try:
        refuse_linked_outputs(results_dir, REPORT_OUTPUTS)
    except LinkedOutputError as exc:
        raise BadInput(str(exc)) from exc


def _check_text_files(results_dir: Path) -> None:
    """Refuse a folder whose scenario or timeline is unreadable before anything is rebuilt into it."""
    from rushhour.reports.rundata.results import ResultsError, read_text

    for name in (SCENARIO_FILE, EVENTS_FILE):
        if (results_dir / name).is_file():
            try:
                read_text(results_dir / name)
            except ResultsError as exc:
                raise BadInput(str(exc)) from exc


def _report_ab(results_dir: Path) -> None:
    """An A/B run's folder: rebuild ab.json, ab.md, ab.html and junit.xml, exit with its verdict."""
    from rushhour.reports.ab.build import build_ab, is_ab_folder
    from rushhour.reports.rundata.results import ResultsError

    if not is_ab_folder(results_dir):
        return
    try:
        doc = build_ab(results_dir)
    except ResultsError as exc:
        raise BadInput(str(exc)) from exc
    click.echo(f"report: {results_dir / AB_HTML_FILE}")
    click.echo(terminal_text(doc["sentence"]))
    raise SystemExit(doc["exit_code"])


@click.command()
@click.argument("baseline", type=DIR, nargs=-1, required=True)
@click.argument("current_dir", type=DIR)
@click.option("--min-change", type=click.FloatRange(0, 10), default=0.10, show_default=True, callback=finite,
              help="Smallest relative P99 increase that can count as a regression.")
@click.option("--paired/--unpaired", default=None,
              help="Insist on a request-by-request comparison (refused, exit 2, when the schedules differ), "
                   "or never pair. Default: paired when the runs replayed the same schedule.")
@click.option("--population", default="", metavar="SPEC",
              help='Who the gate compares, e.g. "exclude=document,by=priority,p=99" (the default) or '
                   '"kinds=short,by=none".')
@click.option("--metric", default=None, metavar="COLUMN",
              help="The requests.parquet time column the gate compares: latency_ms (default), ttft_ms, tpot_ms, "
                   "itl_max_ms, ...")
def compare(baseline: tuple[Path, ...], current_dir: Path, min_change: float, paired: bool | None,
            population: str, metric: str | None) -> None:
    """Regression verdict on P99: BASELINE... (one run, a folder of runs, or several) vs CURRENT_DIR.

    Prints P50/P95/P99 and cost per 1k characters side by side, then why it decided: the
    population, sample counts, paired or not, each group's ratio and interval, the threshold.
    Exit 1 on regression, 2 on unusable input.
    """
    from rushhour.reports.gate.compare import GATE_METRICS, compare_runs, explain_comparison
    from rushhour.reports.gate.population import parse_population
    from rushhour.reports.rundata.results import ResultsError

    try:
        gate_population = parse_population(population + (f",metric={metric}" if metric else ""))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--population") from exc
    if gate_population.metric not in GATE_METRICS:
        raise click.BadParameter(f'"{gate_population.metric}" is not a time column the gate can compare; use one '
                                 f"of {', '.join(GATE_METRICS)}.", param_hint="--metric" if metric else "--population")
    try:
        result = compare_runs(list(baseline), current_dir, min_relative_change=min_change, paired=paired,
                              population=gate_population)
    except ResultsError as exc:
        raise BadInput(str(exc)) from exc
    click.echo("\n".join(terminal_text(line) for line in explain_comparison(result).splitlines()))
    raise SystemExit(1 if result.regression else 0)
