"""The CLI's error for bad input: a sentence naming what was wrong, exit code 2; and the check
every numeric flag shares, that its value is a finite number."""

from __future__ import annotations

import math

import click

from rushhour.kernel.contract import ExitCode

EXIT_OK = ExitCode.OK
EXIT_FAILED = ExitCode.FAILED
EXIT_BAD_INPUT = ExitCode.BAD_INPUT
EXIT_ABORTED = ExitCode.INVALID


class BadInput(click.ClickException):
    """Raised by any command for an invalid flag value or input file (exit code 2)."""

    exit_code = EXIT_BAD_INPUT


def finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback: refuse nan and inf (click's ranges let them through), exit 2 naming the flag."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f'"{value}" is not a finite number.')
    return value
