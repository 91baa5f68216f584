"""The CLI's error for bad input: a sentence naming what was wrong, exit code 2."""

from __future__ import annotations

import click

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_ABORTED = 3


class BadInput(click.ClickException):
    """Raised by any command for an invalid flag value or input file (exit code 2)."""

    exit_code = EXIT_BAD_INPUT
