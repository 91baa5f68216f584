"""`rushhour ab SCENARIO --baseline TARGET --candidate TARGET`: both measured side by side, one verdict.

Exit codes: 0 no regression, 1 regression, 2 bad input (an unknown or unreachable target, a
scenario without a latency SLO), 3 invalid measurement or inconclusive.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from rushhour.kernel.contract import AB_HTML_FILE
from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.cli.run import _check_duration, prepare, results_folder
from rushhour.scenarios.spec.model import ScenarioError
from rushhour.scenarios.spec.plan import DrillPlan, Overrides, build_plan, describe
from rushhour.scenarios.spec.target import PROTOCOL_NAMES

if TYPE_CHECKING:
    from rushhour.scenarios.ab.targets import ArmTarget
    from rushhour.scenarios.ab.trials import TrialDesign

    Arms = tuple[ArmTarget, ArmTarget]

ARM_RATE_FACTOR = 2.0
"""With each request sent to a random arm, the schedule is drawn at this multiple of the scenario's
rate, so each of the two arms carries the scenario's rate."""
TARGET_HELP = ('A URL of a running service (on this machine unless --allow-remote), "embedded" (the bundled '
               'reference server with the scenario\'s settings, booted for this run) or "embedded:CONFIG.yaml".')


@click.command("ab")
@click.argument("scenario")
@click.option("--baseline", required=True, metavar="TARGET", help="The version to compare against. " + TARGET_HELP)
@click.option("--candidate", required=True, metavar="TARGET", help="The version under test. " + TARGET_HELP)
@click.option("--trials", type=click.IntRange(4, 100_000), help="Trials (a multiple of 4: ABBA blocks). "
              "Default: trials of about 2.5 s over the scenario's duration.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Results directory, new or empty "
              "(default: a fresh results/<scenario>-<UTC timestamp>-<id>).")
@click.option("--protocol", type=click.Choice(PROTOCOL_NAMES), help="The protocol both targets speak (default: the "
              "scenario's target.protocol, else rushhour).")
@click.option("--allow-remote", is_flag=True, help="Allow a target that is not on this machine.")
@click.option("--seed", type=int, help="Seed of the arrival schedule and of the trial order.")
@click.option("--duration", callback=_check_duration, help='Run length, e.g. "60s" (default: the scenario\'s).')
@click.option("--threshold", type=click.FloatRange(1.0, 100.0, min_open=True), default=1.10, show_default=True,
              help="The candidate/baseline percentile ratio that counts as a regression.")
@click.option("--interleave", type=click.Choice(["requests", "trials"]), default="requests", show_default=True,
              help="requests: each request to an arm drawn at random, the schedule drawn at twice the scenario's "
              "rate so each arm carries the scenario's load, both loaded at once; trials: ABBA blocks of trials, "
              "one arm loaded at a time (docs/ab.md says which has more power where).")
@click.option("--dry-run", is_flag=True, help="Validate, print the plan and the trial order, probe URL targets; "
              "boot and load nothing.")
def ab(scenario: str, baseline: str, candidate: str, trials: int | None, out: Path | None, protocol: str | None,
       allow_remote: bool, seed: int | None, duration: str | None, threshold: float, interleave: str,
       dry_run: bool) -> None:
    """Measure BASELINE and CANDIDATE side by side with SCENARIO's traffic, in the same minutes.

    One schedule (the scenario's traffic and seed) is fired open-loop at both arms, so both meet the
    same machine: by default each request goes to an arm drawn at random (the schedule drawn at twice
    the scenario's rate, so each arm carries the scenario's load); with --interleave trials, the arms
    take turns in ABBA blocks of trials whose order is drawn from the seed. Per priority and per
    latency SLO percentile, the verdict is the candidate/baseline ratio with an interval over pairs
    of time slices; failures count as infinitely slow, and an error share significantly higher in
    the candidate is a regression too. Writes requests.parquet (with arm and trial), ab.json,
    ab.html, ab.md and junit.xml. The last line printed is the verdict.

    Exit codes: 0 no regression, 1 regression, 2 bad input, 3 invalid measurement or inconclusive.
    """
    from rushhour.reports.ab.groups import DEFAULT_CONFIDENCE, NoLatencySloError, latency_slos
    from rushhour.scenarios.ab.targets import TargetError, parse_target, probe_arm
    from rushhour.scenarios.ab.trials import DesignError, TrialDesign, default_trials

    flags = Overrides(protocol=protocol, duration=duration, seed=seed, no_chaos=True)
    plan = prepare(scenario, flags, allow_remote=True)  # the scenario's own target is never contacted
    if interleave == "requests":
        plan = each_arm_at_full_rate(plan)
    try:
        latency_slos(plan.scenario.slos, plan.source)
        targets = (parse_target("baseline", baseline, plan.scenario, allow_remote=allow_remote),
                   parse_target("candidate", candidate, plan.scenario, allow_remote=allow_remote))
        design = TrialDesign.build(plan.duration_s, trials or default_trials(plan.duration_s),
                                   plan.scenario.traffic.seed, interleave)
        probed = {t.arm: probe_arm(t, t.url, plan.scenario.target) for t in targets if t.url is not None}
    except (NoLatencySloError, TargetError, DesignError) as exc:
        raise BadInput(str(exc)) from exc
    _say_plan(plan, targets, design, probed, dry_run)
    if dry_run:
        return
    _run(plan, targets, design, probed, results_folder(out, f"{plan.scenario.name}-ab"), threshold, DEFAULT_CONFIDENCE)


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
    arms = "".join("A" if a == "baseline" else "B" for a in design.arms)
    if design.interleave == "requests":
        echo(f"trials     {design.trials // 2} slices of {design.trial_s:.2f} s, each request to a random arm; "
             f"the schedule at {ARM_RATE_FACTOR:g}x the scenario's rate, so each arm carries the scenario's load")
    else:
        echo(f"trials     {design.trials} x {design.trial_s:.2f} s, order {arms} (A baseline, B candidate)")
    for line in probed.values():
        echo(line)


def _run(plan: DrillPlan, targets: Arms, design: TrialDesign, probed: dict[str, str], folder: Path,
         threshold: float, confidence: float) -> None:
    from rushhour.reports.rundata.results import ResultsError
    from rushhour.scenarios.ab.runner import AbRun
    from rushhour.scenarios.ab.targets import TargetError
    from rushhour.scenarios.run.resultsdir import ResultsDirError

    try:
        doc = AbRun(plan, targets, design, folder, threshold, confidence, probed=probed).run()
    except (TargetError, ResultsDirError, ResultsError) as exc:
        raise BadInput(str(exc)) from exc
    for group in doc["groups"]:
        click.echo(f"{group['name']}: P{group['percentile']:g} {group['ratio_text']}, MDE {group['mde_text']}, "
                   f"errors {_pct(group['errors']['baseline'])} / {_pct(group['errors']['candidate'])}: "
                   f"{group['verdict'].replace('_', ' ')}")
    click.echo(f"report: {folder / AB_HTML_FILE}")
    click.echo(doc["sentence"])
    raise SystemExit(doc["exit_code"])


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
