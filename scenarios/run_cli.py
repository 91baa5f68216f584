"""`rushhour run SCENARIO`: validate, (dry-)plan, and run one drill; exit code from the verdict."""

from __future__ import annotations

from pathlib import Path

import click

from scenarios.clierrors import EXIT_ABORTED, BadInput
from scenarios.plan import DrillPlan, Overrides, apply_overrides, build_plan, describe, pin_rate_scale
from scenarios.spec import ScenarioError, is_loopback_url, load_scenario, resolve_path
from scenarios.units import parse_duration


def _check_duration(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        if parse_duration(value) <= 0:
            raise ValueError(f'"{value}" must be longer than zero.')
    except ValueError as exc:
        raise BadInput(f"--duration: {exc}") from exc
    return value


def prepare(scenario: str, flags: Overrides, *, allow_remote: bool) -> DrillPlan:
    """Load, override and resolve the scenario; refuse a non-loopback target unless allowed."""
    try:
        path = resolve_path(scenario)
        source = str(path)
        base_dir = path.resolve().parent
        spec = pin_rate_scale(load_scenario(path), source=source, base_dir=base_dir)
        spec = apply_overrides(spec, flags, source)
        url = spec.target.url
        if url is not None and not is_loopback_url(url) and not allow_remote:
            field = "--target" if flags.target_url else "target.url"
            raise ScenarioError(
                f'{source}: {field}: "{url}" is not on this machine (127.0.0.0/8, ::1 or localhost); '
                "pass --allow-remote to load a remote service on purpose.")
        return build_plan(spec, source=source, base_dir=base_dir)
    except ScenarioError as exc:
        raise BadInput(str(exc)) from exc


@click.command("run")
@click.argument("scenario")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Results directory "
              "(default results/<scenario>-<UTC timestamp>).")
@click.option("--target", "target_url", help="Load this running service instead of the scenario's target.")
@click.option("--traffic", help='Replace the traffic model, e.g. "constant:20" (requests/s).')
@click.option("--duration", callback=_check_duration, help='Run length, e.g. "30s" or "3m".')
@click.option("--seed", type=int, help="Seed of the arrival schedule.")
@click.option("--no-chaos", is_flag=True, help="Skip the scenario's chaos experiments.")
@click.option("--dry-run", is_flag=True, help="Validate and print the plan; send nothing, boot nothing.")
@click.option("--processes", type=click.IntRange(1, 64), help="Locust processes generating the load.")
@click.option("--allow-remote", is_flag=True, help="Allow a target that is not on this machine.")
def run(scenario: str, out: Path | None, target_url: str | None, traffic: str | None, duration: str | None,
        seed: int | None, no_chaos: bool, dry_run: bool, processes: int | None, allow_remote: bool) -> None:
    """Run one drill of SCENARIO (a file or a bundled name) and report on it.

    Exit codes: 0 all SLOs met, 1 an SLO missed, 2 invalid input, 3 aborted or invalid measurement.
    """
    flags = Overrides(target_url=target_url, traffic=traffic, duration=duration, seed=seed,
                      no_chaos=no_chaos, processes=processes)
    plan = prepare(scenario, flags, allow_remote=allow_remote)
    if dry_run:
        click.echo(describe(plan))
        return
    from scenarios.runner import Drill, default_results_dir

    results = out or default_results_dir(plan.scenario.name)
    result = Drill(plan, results).run()
    click.echo(f"verdict: {result.verdict} - {result.reason}".rstrip(" -"))
    report = result.results_dir / "report.html"
    click.echo(f"report: {report if report.exists() else result.results_dir}")
    if result.exit_code:
        raise SystemExit(result.exit_code if result.exit_code in (1, EXIT_ABORTED) else EXIT_ABORTED)
