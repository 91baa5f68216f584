"""`rushhour ab calibrate SCENARIO --baseline TARGET [--candidate TARGET] [--nights N]`: the runner measured.

N same-versus-same nights against the user's own service on the user's own runner (the baseline
against itself, or two replicas of one version), each with a fresh seed, each a full `rushhour ab`
night in its own folder. The record, written where later verdicts read it, keeps every night and
the measured false-alarm rate with its Clopper-Pearson bound and the runner's detectable change.

Exit codes: 0 record written, 2 bad input, 3 no night gave a verdict (every one invalid).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from rushhour.scenarios.cli.ab import TARGET_HELP, _run, ab, night_seed, prepare_night
from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.cli.override_flags import override_options
from rushhour.scenarios.cli.run import results_folder

__all__ = ["calibrate"]

Command = TypeVar("Command", bound=Callable[..., Any])


def as_in_ab(name: str, help_text: str) -> Callable[[Command], Command]:
    """`rushhour ab`'s option `name` (flag, type, bounds, default) with this command's help: the
    option is declared once, on `ab`, and a night here reads it as `ab` does."""
    of_ab = next(p for p in ab.params if isinstance(p, click.Option) and p.name == name)
    return click.option(*of_ab.opts, name, type=None if of_ab.is_flag else of_ab.type, is_flag=of_ab.is_flag,
                        default=of_ab.default, show_default=of_ab.show_default, metavar=of_ab.metavar,
                        help=help_text)


@click.command("calibrate", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("scenario")
@click.option("--baseline", required=True, metavar="TARGET", help="The version measured against itself. " + TARGET_HELP)
@click.option("--candidate", metavar="TARGET", help="A second replica of the same version (default: the baseline "
              "itself, both arms sent to one target).")
@click.option("--nights", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Same-versus-same nights to run; 30 bound a runner with no false alarm below 9.5% at 95%.")
@click.option("--record", type=click.Path(dir_okay=False, path_type=Path), default=Path("ab-calibration.json"),
              show_default=True, help="Where the record is written; rushhour ab reads it from here by default.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Folder of the nights' results, new "
              "or empty (default: a fresh results/<scenario>-calibrate-<UTC timestamp>-<id>).")
@as_in_ab("trials", "Trials per night, as rushhour ab --trials.")
@override_options("protocol", "duration", notes={"protocol": "The baseline and the candidate both speak it.",
                  "duration": "Each night runs this long."})
@as_in_ab("allow_remote", "Allow a target that is not on this machine.")
@as_in_ab("threshold", "The ratio that counts as a regression, as in the gate the record is for.")
@as_in_ab("error_margin", "As rushhour ab --error-margin.")
@as_in_ab("interleave", "As rushhour ab --interleave.")
def calibrate(scenario: str, baseline: str, candidate: str | None, nights: int, record: Path, out: Path | None,
              trials: int | None, protocol: str | None, allow_remote: bool, duration: str | None, threshold: float,
              error_margin: float, interleave: str) -> None:
    """Run NIGHTS same-versus-same A/B nights of SCENARIO on this runner and write the calibration record.

    Each night is a regression verdict (a false alarm), no regression, inconclusive or invalid; the
    record keeps them all, the false alarms with their one-sided 95% Clopper-Pearson bound, and the
    median smallest change the nights could detect. Every later rushhour ab verdict quotes it.
    """
    from rushhour.kernel.atomic import write_json_atomic
    from rushhour.reports.ab.calibration import calibration_record, night_row, quote
    from rushhour.reports.ab.groups import DEFAULT_CONFIDENCE
    from rushhour.scenarios.ab.targets import TargetError, probe_arm
    from rushhour.scenarios.run.envinfo import machine_facts

    twin = candidate or baseline
    folder = results_folder(out, f"{Path(scenario).stem}-calibrate")
    rows = []
    scenario_name = Path(scenario).stem
    for night in range(nights):
        seed, _drawn = night_seed(None)
        plan, targets, design = prepare_night(scenario, baseline, twin, protocol=protocol, duration=duration,
                                              seed=seed, trials=trials, interleave=interleave,
                                              allow_remote=allow_remote)
        try:
            probed = {t.arm: probe_arm(t, t.url, plan.scenario.target) for t in targets if t.url is not None}
        except TargetError as exc:
            raise BadInput(str(exc)) from exc
        click.echo(f"night {night + 1}/{nights} (seed {seed})", err=True)
        doc = _run(plan, targets, design, probed, folder / f"night-{night + 1:03d}", threshold, DEFAULT_CONFIDENCE,
                   error_margin=error_margin, calibration=None, stream=sys.stderr)
        rows.append(night_row(doc))
        scenario_name = plan.scenario.name
    result = calibration_record(rows, scenario=scenario_name, baseline=baseline, candidate=twin,
                                runner=machine_facts())
    result.update(threshold=threshold, error_margin=error_margin, interleave=interleave, results=str(folder))
    write_json_atomic(result, record)
    click.echo(f"record: {record}")
    click.echo(quote(result))
    raise SystemExit(3 if all(r["verdict"] == "invalid" for r in rows) else 0)
