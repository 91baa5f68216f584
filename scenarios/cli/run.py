"""`rushhour run SCENARIO`: validate, (dry-)plan, and run one drill; exit code from the verdict."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rushhour.kernel.contract import REPORT_HTML_FILE
from rushhour.scenarios.cli.calibration import calibrate_scenario
from rushhour.scenarios.cli.errors import EXIT_ABORTED, BadInput
from rushhour.scenarios.cli.override_flags import allow_remote_option, override_options
from rushhour.scenarios.cli.run_target import check_target, describe_target
from rushhour.scenarios.protocols.admission import Context, Needs, Refused, admit
from rushhour.scenarios.run.overhead import SKIP_ENV
from rushhour.scenarios.run.resultsdir import ResultsDirError, claim_results_dir, new_results_dir
from rushhour.scenarios.spec.model import EmbeddedTarget, Scenario, ScenarioError, load_scenario, resolve_path
from rushhour.scenarios.spec.plan import DrillPlan, Overrides, apply_overrides, build_plan, describe, pin_rate_scale
from rushhour.scenarios.spec.variants import VariantRun, check_embedded, describe_variants, expand_variants

if TYPE_CHECKING:
    from rushhour.scenarios.run.live.watch import LiveWatch

MetricsAt = tuple[int | None, str]
"""--metrics-port and --metrics-host: where the harness serves its live metrics (port None: off)."""


def prepare(scenario: str, flags: Overrides, *, allow_remote: bool, dry_run: bool = False,
            say: Callable[[str], None] = lambda _text: None, recalibrate: bool = True,
            embedded: EmbeddedTarget | None = None) -> DrillPlan:
    """Load the scenario, override, refuse a non-loopback target unless allowed, calibrate a
    relative peak on the target the drill will load (its own step), plan. `embedded` replaces
    the scenario's target with that reference server (the server an A/B baseline boots).

    `--duration` comes last: a peak is pinned to a rate over the file's own window first, so a
    shorter run plays the start of the same drill at the same rate."""
    try:
        path = resolve_path(scenario)
        source = str(path)
        base_dir = path.resolve().parent
        spec = apply_overrides(load_scenario(path), dataclasses.replace(flags, duration=None), source)
        if embedded is not None:
            spec = spec.model_copy(update={"target": spec.target.model_copy(update={"url": None, "embedded": embedded})})
        _guard(spec, flags, allow_remote, source)
        spec = calibrate_scenario(spec, source=source, base_dir=base_dir, dry_run=dry_run, say=say,
                                  recalibrate=recalibrate)
        spec = pin_rate_scale(spec, source=source, base_dir=base_dir)
        spec = apply_overrides(spec, Overrides(duration=flags.duration), source)
        check_embedded(spec, source=source, base_dir=base_dir)
        return build_plan(spec, source=source, base_dir=base_dir)
    except ScenarioError as exc:
        raise BadInput(str(exc)) from exc


def _guard(spec: Scenario, flags: Overrides, allow_remote: bool, source: str) -> None:
    """The admission's guard (no probe) on every address the drill contacts (the target, its metrics endpoint),
    before anything (the calibration included) sends a request."""
    addresses = {"--target" if flags.target_url else "target.url": spec.target.url,
                 "target.metrics_url": spec.target.metrics_url}
    for field, url in addresses.items():
        if url is not None:
            answer = admit(url, Needs(spec.target), Context(field=field, allow_remote=allow_remote,
                                                            allowed=spec.load.allowed_hosts, probe=False))
            if isinstance(answer, Refused):
                raise ScenarioError(f"{source}: {answer.sentence}")


def results_folder(out: Path | None, name: str) -> Path:
    """This run's own results folder: `--out` if new or empty (else exit 2), or a fresh default."""
    try:
        return claim_results_dir(out) if out is not None else new_results_dir(name)
    except ResultsDirError as exc:
        raise BadInput(str(exc)) from exc


def prepare_variants(plan: DrillPlan, only: str | None) -> list[VariantRun]:
    """The plan's variants (or just `only`), each validated against the server config."""
    try:
        return expand_variants(plan.scenario, source=plan.source, base_dir=plan.base_dir, only=only)
    except ScenarioError as exc:
        raise BadInput(str(exc)) from exc


def open_live_watch(plan: DrillPlan, folder: Path, metrics: MetricsAt) -> LiveWatch | None:
    """The live metrics endpoint and terminal view of one drill (None: nothing to watch); exit 2
    when the port cannot be opened."""
    from rushhour.scenarios.run.live.watch import LiveMetricsError, open_live

    try:
        return open_live(plan, folder, port=metrics[0], host=metrics[1], stream=sys.stderr)
    except LiveMetricsError as exc:
        raise BadInput(str(exc)) from exc


def run_variants(plan: DrillPlan, runs: list[VariantRun], top: Path, metrics: MetricsAt = (None, "")) -> int:
    """Each variant in turn into `top/<name>/`, then the comparison; 3 if any run was invalid."""
    from rushhour.reports.variants import write_comparison
    from rushhour.scenarios.run.drill import Drill

    done: list[tuple[str, Path]] = []
    invalid = False
    for i, variant in enumerate(runs, start=1):
        click.echo(f"variant {i}/{len(runs)}: {variant.name}", err=True)
        variant_plan = dataclasses.replace(plan, scenario=variant.scenario)
        drill = Drill(variant_plan, top / variant.name, live=open_live_watch(variant_plan, top / variant.name, metrics))
        result = drill.run()
        done.append((variant.name, result.results_dir))
        invalid |= result.exit_code == EXIT_ABORTED
        click.echo(f"  {variant.name}: {result.verdict} - {result.reason}".rstrip(" -"), err=True)
        if drill.interrupted:
            click.echo("interrupted: the remaining variants were not run.", err=True)
            break
    comparison = write_comparison(top, done)
    passed = [row["name"] for row in comparison["variants"] if row["verdict"] == "pass"]
    click.echo(f"passed: {', '.join(passed) or 'none'}")
    click.echo(f"cheapest passing: {comparison['cheapest_passing'] or 'none'}")
    click.echo(f"comparison: {top / 'comparison.html'}")
    return EXIT_ABORTED if invalid or len(done) < len(runs) else 0


@click.command("run")
@click.argument("scenario")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Results directory, new or "
              "empty (default: a fresh results/<scenario>-<UTC timestamp>-<id>).")
@override_options("target_url", "protocol", "traffic", "duration", "seed", "no_chaos", "processes")
@click.option("--dry-run", is_flag=True,
              help="Validate and print the plan, and probe a --target/url target with one request; boot nothing.")
@click.option("--workers", type=click.IntRange(1, 1024), help="Across hosts: run as a Locust master that waits "
              "for this many `rushhour worker --master HOST:PORT` to join and splits the schedule among them.")
@click.option("--master-bind", default="127.0.0.1:5557", show_default=True,
              help="With --workers: HOST:PORT the master listens on for its workers; beyond loopback it needs "
                   "the cluster secret.")
@click.option("--secret-file", type=click.Path(dir_okay=False, path_type=Path),
              help="With --workers: the cluster secret the workers must prove (default: RUSHHOUR_CLUSTER_SECRET).")
@allow_remote_option()
@click.option("--no-probe", is_flag=True, help="Skip the capability probe (one request to the target before the load).")
@click.option("--no-recalibrate", is_flag=True, help="When the cached capacity behind a relative peak fails its check "
              "step, stop as invalid (exit 3) instead of measuring it again.")
@click.option("--no-overhead-check", is_flag=True, help="Skip measuring the harness's own overhead against a null "
              "target first (cached per machine and version; the report then shows none).")
@click.option("--variant", "only", help="Run only this one of the scenario's variants.")
@click.option("--metrics-port", type=click.IntRange(0, 65535), help="Serve the harness's own Prometheus metrics "
              "(latency from the intended send, faults, phase, SLO burn) on this port while the drill runs; 0 picks "
              "a free port. Default: off.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True, help="Address the metrics endpoint listens on.")
def run(scenario: str, out: Path | None, target_url: str | None, protocol: str | None, traffic: str | None, duration: str | None,
        seed: int | None, no_chaos: bool, dry_run: bool, processes: int | None, workers: int | None,
        master_bind: str, secret_file: Path | None, allow_remote: bool,
        no_probe: bool, no_recalibrate: bool, only: str | None, metrics_port: int | None, metrics_host: str,
        no_overhead_check: bool = False) -> None:
    """Run one drill of SCENARIO (a file or a bundled name) and report on it.

    With `variants:` in the scenario, the drill runs once per variant (same seed and schedule)
    and a comparison.json/.html/.md is written beside the variants' results.

    Exit codes: 0 all SLOs met (with variants: every variant ran validly), 1 an SLO missed,
    2 invalid input, 3 aborted or invalid measurement.
    """
    flags = Overrides.of(click.get_current_context().params)
    plan = prepare(scenario, flags, allow_remote=allow_remote, dry_run=dry_run,
                   say=lambda line: click.echo(line, err=True), recalibrate=not no_recalibrate)
    runs = prepare_variants(plan, only)
    scale_out = _scale_out(workers, master_bind, processes, bool(runs), secret_file)
    if dry_run:
        click.echo(describe(plan))
        click.echo("\n".join(describe_target(plan)))
        check_target(plan, say=click.echo, probe=not no_probe)
        if runs:
            click.echo(describe_variants(runs))
        return
    from rushhour.scenarios.run.drill import Drill

    plan = check_target(plan, say=lambda line: click.echo(line, err=True), probe=not no_probe)
    results = results_folder(out, plan.scenario.name)
    if runs:
        raise SystemExit(run_variants(plan, runs, results, (metrics_port, metrics_host)))
    try:
        result = Drill(plan, results, live=open_live_watch(plan, results, (metrics_port, metrics_host)),
                       overhead_check=not no_overhead_check and not os.environ.get(SKIP_ENV), **scale_out).run()
    except ResultsDirError as exc:
        raise BadInput(str(exc)) from exc
    click.echo(f"verdict: {result.verdict} - {result.reason}".rstrip(" -"))
    report = result.results_dir / REPORT_HTML_FILE
    click.echo(f"report: {report if report.exists() else result.results_dir}")
    if result.exit_code:
        raise SystemExit(result.exit_code if result.exit_code in (1, EXIT_ABORTED) else EXIT_ABORTED)


def _scale_out(workers: int | None, master_bind: str, processes: int | None, variants: bool,
               secret_file: Path | None = None) -> dict[str, Any]:
    """The Drill's keyword arguments for a run across hosts (none on one machine)."""
    from rushhour.scenarios.cli.scaleout import master_settings

    if not workers:
        return {}
    if processes:
        raise BadInput("--workers and --processes exclude each other: with --workers the load comes from the "
                       "workers' hosts.")
    if variants:
        raise BadInput("--workers cannot run a scenario with variants yet; run each variant's scenario on its own.")
    return {"remote_workers": workers, **master_settings(master_bind, secret_file)}
