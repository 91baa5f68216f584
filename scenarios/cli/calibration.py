"""The calibration step of `rushhour run` and `rushhour capacity --calibrate`.

A scenario whose peak is relative to the machine (`peak_rps: 0.7x capacity`) needs the capacity of
the target the drill will load before anything can be planned: the embedded server on this
machine, or the service at the scenario's URL (after `--target`, under the same loopback guard),
from the cache kept per machine and target, or measured now, which is a capacity search of
minutes; `rushhour run` applies its overrides first, so `--traffic constant:RPS` needs none. That
is a step of its own, said on the terminal as it starts and ends, and run before planning, so
planning stays a pure function of the scenario file. The drill writes what the step found into
`events.jsonl` (its `calibration` event) and `summary.json`.

A cached figure is checked first by one short step at that rate; when it misses, the capacity is
measured again, or, with `--no-recalibrate`, the run stops as invalid (exit 3).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from rushhour.kernel.contract import ExitCode
from rushhour.scenarios.capacity.calibrate import (
    CalibrationAborted,
    CalibrationInvalid,
    calibrated_peak,
    calibrated_target,
)
from rushhour.scenarios.capacity.conditions import HEALTHY
from rushhour.scenarios.spec.model import Scenario
from rushhour.scenarios.spec.peak import Calibration, RelativePeak
from rushhour.scenarios.spec.plan import with_calibration
from rushhour.scenarios.spec.urls import hide_userinfo

__all__ = ["CalibrationStopped", "StaleCalibration", "calibrate", "calibrate_scenario"]

Say = Callable[[str], None]


class StaleCalibration(click.ClickException):
    """The cached capacity failed its check and re-measuring was forbidden: the run is invalid."""

    exit_code = ExitCode.INVALID


class CalibrationStopped(click.ClickException):
    """The calibration was interrupted or could not run to its end: the run is aborted."""

    exit_code = ExitCode.INVALID


def calibrate(scenario: Scenario, relative: RelativePeak | None = None, *, source: str, base_dir: Path,
              dry_run: bool, say: Say, recalibrate: bool = True) -> Calibration:
    """The capacity `relative` (default: the scenario's own relative peak, else 1x healthy) stands
    for on this machine; a dry run boots nothing and shows the search's first rate instead."""
    relative = relative or scenario.traffic.relative_peak or RelativePeak(1.0, HEALTHY)
    url = calibrated_target(scenario)
    where = f"on {hide_userinfo(url)}" if url else "of the embedded reference server on this machine"
    if not dry_run:
        say(f"calibration: the capacity behind peak_rps {relative.text} {where} ...")
    try:
        calibration = calibrated_peak(scenario, relative, source=source, base_dir=base_dir, dry_run=dry_run,
                                      say=lambda text: say(f"calibrating: {text}"), recalibrate=recalibrate)
    except CalibrationInvalid as exc:
        raise StaleCalibration(str(exc)) from exc
    except CalibrationAborted as exc:
        raise CalibrationStopped(str(exc)) from exc
    if not dry_run:  # a dry run shows it in its plan
        say(f"capacity   {calibration.text}")
    return calibration


def calibrate_scenario(scenario: Scenario, *, source: str, base_dir: Path, dry_run: bool, say: Say,
                       recalibrate: bool = True) -> Scenario:
    """The scenario with a relative peak resolved to a rate (unchanged when its peak is absolute)."""
    if scenario.traffic.relative_peak is None:
        return scenario
    calibration = calibrate(scenario, source=source, base_dir=base_dir, dry_run=dry_run, say=say,
                            recalibrate=recalibrate)
    return with_calibration(scenario, calibration, source=source)
