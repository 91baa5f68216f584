"""Entry point that runs the `chaos` command in a child process of the drill.

The timeline stops a running experiment with SIGINT because that is the one signal Chaos
Toolkit turns into an interruption that still plays the rollbacks (SIGTERM raised inside a
Python activity is swallowed as a failed activity, and SIGUSR2 skips rollbacks). A process
started from a shell job that ignores SIGINT would inherit the ignore, so the handler is put
back before Chaos Toolkit starts.
"""

from __future__ import annotations

import signal


def main() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from chaostoolkit.cli import cli

    cli(prog_name="chaos")


if __name__ == "__main__":
    main()
