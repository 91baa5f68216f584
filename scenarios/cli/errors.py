"""The CLI's error for bad input: a sentence naming what was wrong, exit code 2."""

from __future__ import annotations

import click

from kernel.contract import ExitCode

EXIT_OK = ExitCode.OK
EXIT_FAILED = ExitCode.FAILED
EXIT_BAD_INPUT = ExitCode.BAD_INPUT
EXIT_ABORTED = ExitCode.INVALID


class BadInput(click.ClickException):
    """Raised by any command for an invalid flag value or input file (exit code 2)."""

    exit_code = EXIT_BAD_INPUT
