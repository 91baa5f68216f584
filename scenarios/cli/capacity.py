"""`rushhour capacity SCENARIO`: the highest arrival rate at which every SLO still holds."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import click

from rushhour.kernel.clock import parse_duration
from rushhour.kernel.contract import CAPACITY_HTML_FILE
from rushhour.scenarios.capacity.conditions import HEALTHY, N_MINUS_ONE, parse_conditions
from rushhour.scenarios.capacity.job import (
    DRIFT_CHECKS,
    RETRY_MAX_S,
    RETRY_S,
    STEP_ANCHOR_S,
    CapacityJob,
    DriftCheck,
    SloFloor,
    check_floors,
    default_range,
    load_mix,
    select_slos,
    slo_floors,
    step_rules,
)
from rushhour.scenarios.capacity.search import MAX_RETRIES, SearchSettings
from rushhour.scenarios.cli.errors import BadInput, finite
from rushhour.scenarios.cli.override_flags import allow_remote_option, override_options
from rushhour.scenarios.protocols.admission import Context, Needs, Refused, admit
from rushhour.scenarios.run.resultsdir import ResultsDirError, claim_results_dir, new_results_dir
from rushhour.scenarios.spec.chaos import check_experiment
from rushhour.scenarios.spec.model import Scenario, ScenarioError, load_scenario, resolve_path
from rushhour.scenarios.spec.plan import Overrides, apply_overrides, check_slo_scopes

MIN_STEP_S = 5.0


def _step_seconds(value: str, option: str = "--step-duration", *, none: bool = False) -> float:
    """A step length of at least `MIN_STEP_S` (or, with `none`, 0 for no such step); exit 2 otherwise."""
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise BadInput(f"{option}: {exc}") from exc
    if seconds < MIN_STEP_S and not (none and seconds == 0):
        raise BadInput(f'{option}: "{value}" is shorter than {MIN_STEP_S:g} s, too short to judge a step'
                       + (" (0 for none)." if none else "."))
    return seconds


def _retry_max(value: str, retry_s: float) -> float:
    """--retry-max in seconds: at least --retry-duration (with a retry at all); exit 2 otherwise."""
    seconds = _step_seconds(value, "--retry-max")
    if retry_s > 0 and seconds < retry_s:
        raise BadInput(f'--retry-max: "{value}" is shorter than --retry-duration ({retry_s:g} s); give at least '
                       "that, or the same for a retry that never grows.")
    return seconds


def _guard(scenario: Scenario, target_url: str | None, allow_remote: bool, source: str) -> None:
    """The admission's guard (no probe) on the target (`--target` applied) and its metrics endpoint."""
    addresses = {"--target" if target_url else "target.url": scenario.target.url,
                 "target.metrics_url": scenario.target.metrics_url}
    for field, url in addresses.items():
        if url is not None:
            answer = admit(url, Needs(scenario.target), Context(field=field, allow_remote=allow_remote,
                                                                allowed=scenario.load.allowed_hosts, probe=False))
            if isinstance(answer, Refused):
                raise ScenarioError(f"{source}: {answer.sentence}")


def _conditions(text: str, base_dir: Path) -> list[str]:
    """The --faults conditions, each named once; an experiment file checked as a scenario's chaos entry is."""
    items = [part.strip() for part in text.split(",")]
    if len(items) > 1 and "" in items:
        raise ScenarioError(f'--faults: "{text}" has an empty item; separate conditions by single commas.')
    repeated = next((item for index, item in enumerate(items) if item in items[:index]), None)
    if repeated is not None:
        raise ScenarioError(f'--faults: "{text}" names "{repeated}" twice; each condition is searched once.')
    try:
        names = parse_conditions(text)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from exc
    for name in names:
        if name in (HEALTHY, N_MINUS_ONE):
            continue
        path = Path(name) if Path(name).is_file() else base_dir / name
        if not path.is_file():
            raise ScenarioError(f'--faults: "{name}" is neither none, n-1 nor an experiment file that exists.')
        check_experiment(path, "--faults")
    return names


def _rates(floors: list[SloFloor], min_rps: float | None, max_rps: float | None) -> tuple[float, float]:
    """The search's lowest and highest rate; exit 2 when the highest is not above the lowest."""
    if min_rps is not None and max_rps is not None and min_rps >= max_rps:
        raise ScenarioError(f"--min-rps {min_rps:g} must be below --max-rps {max_rps:g}.")
    low, high = default_range(floors, min_rps, max_rps)
    if low >= high:
        raise ScenarioError(f"--max-rps {high:g} must be above the lowest rate the SLOs can be shown met at, "
                            f"{low:g} req/s (the default --min-rps); raise --max-rps or pass a lower --min-rps.")
    return low, high


def build_job(scenario_spec: str, *, target_url: str | None, slos: tuple[str, ...], faults: str,
              min_rps: float | None, max_rps: float | None, precision: float, step_s: float,
              require_rps: float | None, out: Path | None, allow_remote: bool, seed: int | None,
              retry_s: float = 0.0, retry_max_s: float | None = None) -> CapacityJob:
    """Everything checked and resolved before anything boots; ScenarioError on bad input. A step
    that ends open is stepped once more for `retry_s` seconds (0: it counts as a failure at once),
    or, with `retry_max_s`, for as long as its clustering asks, between the two."""
    path = resolve_path(scenario_spec)
    source, base_dir = str(path), path.resolve().parent
    scenario = apply_overrides(load_scenario(path), Overrides.of({"target_url": target_url, "seed": seed}), source)
    _guard(scenario, target_url, allow_remote, source)
    specs = select_slos(scenario, slos, source=source)
    mix = load_mix(scenario, source=source, base_dir=base_dir)
    check_slo_scopes(specs, mix, source=source)
    floors = slo_floors(mix, specs, step_s)
    low, high = _rates(floors, min_rps, max_rps)
    check_floors(floors, low, step_s, source=source)
    try:
        settings = SearchSettings(min_rps=low, max_rps=high, precision=precision, retry_open=retry_s > 0)
    except ValueError as exc:
        raise ScenarioError(f"--min-rps/--max-rps/--precision: {exc}") from exc
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return CapacityJob(
        scenario=scenario, source=source, base_dir=base_dir, mix=mix, slos=specs,
        conditions=_conditions(faults, base_dir), settings=settings,
        rules=step_rules(step_s, scenario.load.max_lag_p99_ms),
        out_dir=out or Path("results") / f"{scenario.name}-capacity-{stamp}", target_url=target_url,
        require_rps=require_rps, seed=scenario.traffic.seed, floors=floors,
        retry_rules=step_rules(retry_s, scenario.load.max_lag_p99_ms) if retry_s > 0 else None,
        retry_max_s=retry_max_s if retry_s > 0 and retry_max_s is not None and retry_max_s > retry_s else None,
    )


def describe_job(job: CapacityJob) -> str:
    """The --dry-run text: what would be searched, how, and each SLO's floor."""
    s = job.settings
    lines = [f"scenario   {job.scenario.name} ({job.source})",
             f"target     {job.target_url or job.scenario.target.url or 'embedded reference server'}",
             f"conditions {', '.join(job.conditions)}",
             f"rates      {s.min_rps:g} to {s.max_rps:g} req/s, x{s.growth:g} up, then bisect to {100 * s.precision:g}%",
             (f"steps      {job.rules.warmup_s:g} s warm-up + up to {job.rules.measure_s:g} s measured, "
              "stopped early once clear"),
             "retry      " + _retry_line(job),
             f"drift      {job.drift_check}: the first pass stepped again at the end"
             + (f", and a {STEP_ANCHOR_S:g} s window at its rate after every step" if job.drift_check == "steps" else ""),
             "slos"]
    lines += [f"  {f.name:20s} {100 * f.share:5.1f}% of the mix, needs {f.needed} requests: from "
              f"{f.floor_rps:.1f} req/s" for f in job.floors]
    return "\n".join(lines)


def _retry_line(job: CapacityJob) -> str:
    retry = job.retry_rules
    if retry is None:
        return "none: a step that ends open is a failure"
    if job.retry_max_s is None:
        return f"a step that ends open once more, {retry.warmup_s:g} s warm-up + up to {retry.measure_s:g} s measured"
    return (f"a step that ends open again (at most {MAX_RETRIES} times while its window grows), {retry.warmup_s:g} s "
            f"warm-up + {retry.measure_s:g} s to {job.retry_max_s:g} s measured, as its requests' clustering asks")


def _calibrate(scenario_spec: str, *, dry_run: bool, target_url: str | None = None, allow_remote: bool = False) -> None:
    """The calibration step alone: the capacity a relative peak resolves to on the target (`--target`
    as `rushhour run` takes it), cached or measured now."""
    from rushhour.scenarios.cli.calibration import calibrate
    from rushhour.scenarios.spec.peak import RelativePeak

    try:
        path = resolve_path(scenario_spec)
        scenario = apply_overrides(load_scenario(path), Overrides(target_url=target_url), str(path))
        _guard(scenario, target_url, allow_remote, str(path))
        calibration = calibrate(scenario, source=str(path), base_dir=path.resolve().parent, dry_run=dry_run,
                                say=lambda text: click.echo(text, err=True))
    except ScenarioError as exc:
        raise BadInput(str(exc)) from exc
    click.echo(f"capacity [{calibration.condition}]: {calibration.capacity_rps:g} req/s ({calibration.note})")
    relative = RelativePeak(calibration.factor, calibration.condition)
    click.echo(f"{scenario.name}: peak_rps {relative.text} = {calibration.peak_rps:g} req/s")


@click.command("capacity")
@click.argument("scenario")
@override_options("target_url")
@click.option("--slo", "slos", multiple=True, help="Judge only this SLO of the scenario (repeatable).")
@click.option("--faults", default=HEALTHY, show_default=True,
              help='Conditions, comma-separated: none, n-1 (one quality node held down) or an experiment file.')
@click.option("--min-rps", type=click.FloatRange(min=0, min_open=True), callback=finite,
              help="Lowest rate (default: the lowest at which a step can show every SLO met).")
@click.option("--max-rps", type=click.FloatRange(min=0, min_open=True), callback=finite, help="Highest rate (default 10x --min-rps).")
@click.option("--precision", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, callback=finite, help="Stop when (first fail - last pass) / last pass is at most this.")
@click.option("--step-duration", "step_duration", default="30s", show_default=True,
              help="Measured length of a step after its warm-up (clear steps stop early).")
@click.option("--retry-duration", "retry_duration", default=f"{RETRY_S:g}s", show_default=True,
              help="Step once more, for this long, at a rate whose step ended open (neither shown met nor missed) "
                   "before counting it a failure; 0 for no retry (faster, and up to 15% or more under the capacity "
                   "near a knee).")
@click.option("--retry-max", "retry_max", default=f"{RETRY_MAX_S:g}s", show_default=True,
              help="Longest the retry may grow to: a step whose requests came in clusters (a slow service near its "
                   "knee) is retried for as long as its clustering asks to decide it, up to this; equal to "
                   "--retry-duration for a fixed retry.")
@click.option("--drift-check", "drift_check", type=click.Choice(DRIFT_CHECKS), default="steps", show_default=True,
              help="How the search watches the machine: ends steps its first pass again at its end; steps also "
                   f"steps a {STEP_ANCHOR_S:g} s window at that rate after every step, so a figure found in a fast "
                   "spell of a wandering machine is printed unconfirmed (ends is faster, for a machine known steady).")
@click.option("--require", "require_rps", type=click.FloatRange(min=0), callback=finite,
              help="Exit 1 when a condition's capacity is below this rate (req/s).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Results folder, new or empty (default results/<scenario>-capacity-<UTC timestamp>-<id>).")
@override_options("seed", notes={"seed": "The first step is drawn with it, each further step with it plus the step's number."})
@allow_remote_option()
@click.option("--dry-run", is_flag=True, help="Validate and print the plan; boot nothing, send nothing.")
@click.option("--calibrate", is_flag=True, help="Measure (or show the cached) capacity that the scenario's "
              '`peak_rps: 0.7x capacity` resolves to on this machine and target, and cache it; other options but --target, '
              '--allow-remote and --dry-run are ignored.')
def capacity(scenario: str, target_url: str | None, slos: tuple[str, ...], faults: str, min_rps: float | None,
             max_rps: float | None, precision: float, step_duration: str, require_rps: float | None,
             out: Path | None, seed: int | None, allow_remote: bool, dry_run: bool, calibrate: bool,
             drift_check: DriftCheck, retry_duration: str, retry_max: str) -> None:
    """Find the highest arrival rate of SCENARIO's request mix at which every SLO holds.

    Constant open-loop Poisson steps: bracket upward from --min-rps until a step fails, then
    bisect to --precision; a step that ends open is stepped once more for --retry-duration (longer,
    up to --retry-max, where its requests' clustering asks for more to decide it), and a
    short window after every step checks that the machine held (--drift-check). With --faults
    none,n-1 the search runs twice, healthy and with one quality node held down. Writes
    capacity.json and capacity.html.

    Exit codes: 0 every capacity meets --require, 1 one is below it (or even --min-rps failed),
    2 invalid input, 3 generator-bound, interrupted or the target failed.
    """
    if calibrate:
        _calibrate(scenario, dry_run=dry_run, target_url=target_url, allow_remote=allow_remote)
        return
    try:
        job = build_job(scenario, target_url=target_url, slos=slos, faults=faults, min_rps=min_rps, max_rps=max_rps,
                        precision=precision, step_s=_step_seconds(step_duration), require_rps=require_rps, out=out,
                        allow_remote=allow_remote, seed=seed,
                        retry_s=(retry_s := _step_seconds(retry_duration, "--retry-duration", none=True)),
                        retry_max_s=_retry_max(retry_max, retry_s))
    except ScenarioError as exc:
        raise BadInput(str(exc)) from exc
    job = dataclasses.replace(job, drift_check=drift_check)
    if dry_run:
        click.echo(describe_job(job))
        return
    try:  # a folder of its own: steps read their control and part files back, so a reused one would mix runs
        folder = claim_results_dir(out) if out is not None else new_results_dir(f"{job.scenario.name}-capacity")
    except ResultsDirError as exc:
        raise BadInput(str(exc)) from exc
    job = dataclasses.replace(job, out_dir=folder)
    from rushhour.scenarios.capacity.calibrate import remember
    from rushhour.scenarios.capacity.runner import run_capacity

    outcome = run_capacity(job, say=lambda text: click.echo(text, err=True))
    remember(job, outcome.document)
    for condition in outcome.document["conditions"]:
        click.echo(f"capacity [{condition['condition']}]: {condition['summary']}")
    if outcome.document.get("aborted"):
        click.echo(f"aborted: {outcome.document['aborted']}")
    click.echo(f"report: {outcome.out_dir / CAPACITY_HTML_FILE}")
    if outcome.exit_code:
        raise SystemExit(outcome.exit_code)
