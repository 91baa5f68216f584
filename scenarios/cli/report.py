"""`rushhour report` and `rushhour compare`: thin click wrappers around build_reports/compare_runs."""

from __future__ import annotations

from pathlib import Path

import click

from scenarios.cli.errors import BadInput

DIR = click.Path(path_type=Path, file_okay=False)


@click.command()
@click.argument("results_dir", type=DIR)
@click.option("--baseline", type=DIR, default=None, help="Results directory to compare against.")
def report(results_dir: Path, baseline: Path | None) -> None:
    """(Re)render the report of a finished run; exit code is the verdict.

    Writes summary.json, report.html, report.md and junit.xml into RESULTS_DIR.
    Exit 0 pass, 1 SLO missed or regression, 2 bad input, 3 measurement invalid.
    """
    from reports.build import build_reports, exit_code
    from reports.results import ResultsError

    try:
        summary = build_reports(results_dir, baseline=baseline)
    except ResultsError as exc:
        raise BadInput(str(exc)) from exc
    click.echo(f"{summary['verdict'].upper()}: {summary['verdict_reason']}")
    if summary.get("comparison"):
        click.echo(f"baseline: {summary['comparison']['reason']}")
    click.echo(f"report: {results_dir / 'report.html'}")
    raise SystemExit(exit_code(summary))


@click.command()
@click.argument("baseline_dir", type=DIR)
@click.argument("current_dir", type=DIR)
@click.option("--min-change", type=click.FloatRange(0, 10), default=0.10, show_default=True,
              help="Smallest relative P99 increase that can count as a regression.")
def compare(baseline_dir: Path, current_dir: Path, min_change: float) -> None:
    """Regression verdict on P99 between two runs (exit 1 on regression).

    Prints P50/P95/P99 and cost per 1k characters side by side.
    """
    from reports.compare import compare_runs
    from reports.results import ResultsError

    try:
        result = compare_runs(baseline_dir, current_dir, min_relative_change=min_change)
    except ResultsError as exc:
        raise BadInput(str(exc)) from exc
    click.echo(f"{'metric':<26}{'baseline':>14}{'current':>14}{'change':>10}")
    for row in result.rows:
        click.echo(f"{row['metric']:<26}{_fmt(row['baseline']):>14}{_fmt(row['current']):>14}"
                   f"{_fmt_change(row['change']):>10}")
    for note in result.notes:
        click.echo(f"note: {note}")
    click.echo(f"{result.verdict.replace('_', ' ').upper()}: {result.reason}")
    raise SystemExit(1 if result.regression else 0)


def _fmt(value: float | None) -> str:
    from reports.render import format_sig

    return format_sig(value)


def _fmt_change(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f}%"
