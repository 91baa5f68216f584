"""`rushhour ab SCENARIO --baseline TARGET --candidate TARGET`: both measured side by side, one verdict;
`rushhour ab calibrate ...` (`rushhour.scenarios.cli.ab_calibrate`) measures the runner itself.

Exit codes: 0 no regression, 1 regression, 2 bad input (an unknown or unreachable target, a
scenario without a latency SLO), 3 invalid measurement or inconclusive.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rushhour.kernel.contract import AB_HTML_FILE
from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.cli.override_flags import allow_remote_option, override_options
from rushhour.scenarios.cli.run import prepare, results_folder
from rushhour.scenarios.spec.model import ScenarioError, load_scenario, resolve_path
from rushhour.scenarios.spec.plan import DrillPlan, Overrides, build_plan, describe

if TYPE_CHECKING:
    from rushhour.scenarios.ab.targets import ArmTarget, RateTarget
    from rushhour.scenarios.ab.trials import TrialDesign

    Arms = tuple[ArmTarget, ArmTarget]

ARM_RATE_FACTOR = 2.0
"""With each request sent to a random arm, the schedule is drawn at this multiple of the scenario's
rate, so each of the two arms carries the scenario's rate."""
SEED_LIMIT = 2**31
"""A night's seed is drawn below this when --seed is not given."""
TARGET_HELP = ('A URL of a running service (on this machine unless --allow-remote), "embedded" (the bundled '
               'reference server with the scenario\'s settings, booted for this run) or "embedded:CONFIG.yaml".')


class AbCommand(click.Command):
    """`rushhour ab SCENARIO ...`, and `rushhour ab calibrate ...` handed to its own command."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        if args and args[0] == "calibrate":
            from rushhour.scenarios.cli.ab_calibrate import calibrate

            return calibrate.make_context(f"{info_name or 'ab'} calibrate", list(args[1:]), parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.command is not self:
            return ctx.command.invoke(ctx)
        return super().invoke(ctx)


def night_seed(seed: int | None) -> tuple[int, bool]:
    """The night's seed and whether it was drawn: --seed pins it, else a fresh one per night."""
    return (seed, False) if seed is not None else (secrets.randbelow(SEED_LIMIT), True)


@click.command("ab", cls=AbCommand)
@click.argument("scenario")
@click.option("--baseline", required=True, metavar="TARGET", help="The version to compare against. " + TARGET_HELP)
@click.option("--candidate", required=True, metavar="TARGET", help="The version under test. " + TARGET_HELP)
@click.option("--trials", type=click.IntRange(4, 100_000), help="Trials (a multiple of 4: ABBA blocks). "
              "Default: trials of about 2.5 s over the scenario's duration.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Results directory, new or empty "
              "(default: a fresh results/<scenario>-<UTC timestamp>-<id>).")
@override_options("protocol", "seed", "duration", notes={"protocol": "The baseline and the candidate both speak it.",
                  "seed": "It also seeds the texts and the arm order."},
                  defaults={"seed": "a fresh seed drawn per night and recorded in ab.json, so a long-lived "
                            "baseline has not seen the texts"})
@allow_remote_option()
@click.option("--threshold", type=click.FloatRange(1.0, 100.0, min_open=True), default=1.10, show_default=True,
              help="The candidate/baseline percentile ratio that counts as a regression.")
@click.option("--error-margin", type=click.FloatRange(0.0, 1.0, min_open=True), default=0.005, show_default=True,
              help="A pass needs each failure share shown not worse than the baseline's by more than this "
              "(absolute: 0.005 is 0.5 percentage points).")
@click.option("--calibration", type=click.Path(dir_okay=False, path_type=Path), help="The runner's calibration "
              "record, quoted by the verdict (default: ab-calibration.json here when it exists; written by "
              "rushhour ab calibrate SCENARIO --baseline TARGET --nights N --record FILE).")
@click.option("--interleave", type=click.Choice(["requests", "trials"]), default="requests", show_default=True,
              help="requests: the requests in twos, the same request to each arm, which first drawn at random, the "
              "schedule drawn at twice the scenario's "
              "rate so each arm carries the scenario's load, both loaded at once; trials: ABBA blocks of trials, "
              "one arm loaded at a time (docs/ab.md says which has more power where).")
@click.option("--dry-run", is_flag=True, help="Validate, print the plan and the trial order, probe URL targets; "
              "boot and load nothing.")
def ab(scenario: str, baseline: str, candidate: str, trials: int | None, out: Path | None, protocol: str | None,
       allow_remote: bool, seed: int | None, duration: str | None, threshold: float, error_margin: float,
       calibration: Path | None, interleave: str, dry_run: bool) -> None:
    """Measure BASELINE and CANDIDATE side by side with SCENARIO's traffic, in the same minutes.

    One schedule (the scenario's traffic and seed) is fired open-loop at both arms, so both meet the
    same machine: by default the requests go in twos, the same request to each arm, which first drawn at
    random (the schedule drawn at twice
    the scenario's rate, so each arm carries the scenario's load); with --interleave trials, the arms
    take turns in ABBA blocks of trials whose order is drawn from the seed. Per priority and per
    latency SLO percentile, the verdict is the ratio of each arm's percentile over the night's
    answered requests, with an interval from resampling blocks of slice pairs; a percentile with too
    few answers is named and not compared. Failure shares are their own question: significantly
    higher in the candidate is a regression, and a pass needs them shown within --error-margin. The
    first tenth of the run warms both arms and is not judged; a night's texts are fresh unless
    --seed pins them, and arms answering from cache in different shares make the night invalid.
    Writes requests.parquet (with arm and trial), ab.json, ab.html, ab.md and junit.xml. The last
    line printed is the verdict, with the runner's calibration.

    rushhour ab calibrate SCENARIO --baseline TARGET [--candidate TARGET] [--nights N] [--record FILE]:
    N same-versus-same nights on this runner; the record (false alarms with their Clopper-Pearson
    bound, the detectable change) is quoted by every later verdict (rushhour ab calibrate --help).

    Exit codes: 0 no regression, 1 regression, 2 bad input, 3 invalid measurement or inconclusive.
    """
    from rushhour.reports.ab.calibration import CalibrationError
    from rushhour.reports.ab.groups import DEFAULT_CONFIDENCE
    from rushhour.scenarios.ab.targets import TargetError, probe_arm

    night, _ = night_seed(seed)
    plan, targets, design = prepare_night(scenario, baseline, candidate, protocol=protocol, duration=duration,
                                          seed=night, trials=trials, interleave=interleave,
                                          allow_remote=allow_remote, dry_run=dry_run)
    try:
        probed = {t.arm: probe_arm(t, t.url, plan.scenario.target) for t in targets if t.url is not None}
        record = load_calibration(calibration)
    except (TargetError, CalibrationError) as exc:
        raise BadInput(str(exc)) from exc
    _say_plan(plan, targets, design, probed, dry_run)
    if dry_run:
        return
    doc = _run(plan, targets, design, probed, results_folder(out, f"{plan.scenario.name}-ab"), threshold,
               DEFAULT_CONFIDENCE, error_margin=error_margin, calibration=record)
    raise SystemExit(doc["exit_code"])


def prepare_night(scenario: str, baseline: str, candidate: str, *, protocol: str | None, duration: str | None,
                  seed: int, trials: int | None, interleave: str, allow_remote: bool, dry_run: bool = False
                  ) -> tuple[DrillPlan, Arms, TrialDesign]:
    """One night's plan (its seed given), both targets read, and the interleaving with its warm-up and
    fresh texts; BadInput naming what is wrong. A relative peak is calibrated on the baseline, as
    `rushhour run --target` calibrates (same guard, same cache per target); the candidate gets the
    same rate and nothing during the calibration."""
    from rushhour.scenarios.ab.trials import DesignError, TrialDesign, default_trials

    targets, rate = _arms(scenario, baseline, candidate, allow_remote=allow_remote)
    flags = Overrides(target_url=rate.url, protocol=protocol, duration=duration, seed=seed, no_chaos=True)
    # the scenario's own target is never contacted; a baseline calibrated on is guarded as the drill's target
    plan = prepare(scenario, flags, allow_remote=allow_remote if rate.url else True, dry_run=dry_run,
                   say=lambda line: click.echo(line, err=True), embedded=rate.embedded)
    if interleave == "requests":
        plan = each_arm_at_full_rate(plan)
    try:
        design = TrialDesign.build(plan.duration_s, trials or default_trials(plan.duration_s),
                                   plan.scenario.traffic.seed, interleave, warmup=True, fresh_texts=True)
    except DesignError as exc:
        raise BadInput(str(exc)) from exc
    return plan, targets, design


def _arms(scenario: str, baseline: str, candidate: str, *, allow_remote: bool) -> tuple[Arms, RateTarget]:
    """Both TARGETs read against the scenario file and its latency SLOs checked, before anything is
    measured; with the baseline target a relative peak is calibrated on."""
    from rushhour.reports.ab.groups import NoLatencySloError, latency_slos
    from rushhour.scenarios.ab.targets import TargetError, parse_target, rate_target

    try:
        path = resolve_path(scenario)
        spec = load_scenario(path)
        latency_slos(spec.slos, str(path))
        targets = (parse_target("baseline", baseline, spec, allow_remote=allow_remote),
                   parse_target("candidate", candidate, spec, allow_remote=allow_remote))
        return targets, rate_target(targets[0], spec)
    except (ScenarioError, NoLatencySloError, TargetError) as exc:
        raise BadInput(str(exc)) from exc


def load_calibration(path: Path | None) -> dict[str, Any] | None:
    """The calibration record named, else the default one here when it exists, else None."""
    from rushhour.reports.ab.calibration import DEFAULT_RECORD, read_record

    if path is None:
        path = Path(DEFAULT_RECORD)
        if not path.is_file():
            return None
    return read_record(path)


def each_arm_at_full_rate(plan: DrillPlan) -> DrillPlan:
    """The plan with its schedule drawn at ARM_RATE_FACTOR times the scenario's rate: with every
    request sent to a random arm, each arm then carries the load the scenario describes, and a
    slower version meets the queueing it would meet in service."""
    traffic = plan.scenario.traffic.model_copy(update={"rate_scale": ARM_RATE_FACTOR * plan.rate_scale,
                                                       "peak_rps": None})
    try:
        return build_plan(plan.scenario.model_copy(update={"traffic": traffic}), source=plan.source,
                          base_dir=plan.base_dir)
    except ScenarioError as exc:
        raise BadInput(str(exc)) from exc


def _say_plan(plan: DrillPlan, targets: Arms, design: TrialDesign, probed: dict[str, str], dry_run: bool) -> None:
    echo = click.echo if dry_run else (lambda line: click.echo(line, err=True))
    if dry_run:
        echo(describe(plan))
    for target in targets:
        echo(f"{target.arm:<10} {target.describe()}")
    if plan.scenario.traffic.calibration is not None:
        echo(f"rate       calibrated on the baseline, each arm loaded at it: {plan.scenario.traffic.calibration.text}")
    arms = "".join("A" if a == "baseline" else "B" for a in design.arms)
    echo(f"seed       {design.seed} (texts salted {design.text_salt}); the first {design.warmup_pairs} slice "
         "pair(s) warm both arms and are not judged")
    if design.interleave == "requests":
        echo(f"trials     {design.trials // 2} slices of {design.trial_s:.2f} s, the requests in twos, one to each arm; "
             f"the schedule at {ARM_RATE_FACTOR:g}x the scenario's rate, so each arm carries the scenario's load")
    else:
        echo(f"trials     {design.trials} x {design.trial_s:.2f} s, order {arms} (A baseline, B candidate)")
    for line in probed.values():
        echo(line)


def _run(plan: DrillPlan, targets: Arms, design: TrialDesign, probed: dict[str, str], folder: Path,
         threshold: float, confidence: float, *, error_margin: float, calibration: dict[str, Any] | None,
         stream: Any = None) -> dict[str, Any]:
    """Run one night and print its groups and verdict; returns the ab.json document."""
    from rushhour.reports.rundata.results import ResultsError
    from rushhour.scenarios.ab.runner import AbRun
    from rushhour.scenarios.ab.targets import TargetError
    from rushhour.scenarios.run.resultsdir import ResultsDirError

    try:
        extra = {} if stream is None else {"stream": stream}
        doc = AbRun(plan, targets, design, folder, threshold, confidence, probed=probed, error_margin=error_margin,
                    calibration=calibration, **extra).run()
    except (TargetError, ResultsDirError, ResultsError) as exc:
        raise BadInput(str(exc)) from exc
    for group in doc["groups"]:
        click.echo(f"{group['name']}: night P{group['percentile']:g} of answers {group['ratio_text']}, "
                   f"MDE {group['mde_text']}: {group['verdict'].replace('_', ' ')}")
    for row in doc["errors"]:
        click.echo(f"{row['population']}: {row['text']}")
    click.echo(f"report: {folder / AB_HTML_FILE}")
    click.echo(doc["sentence"])
    return doc

