"""The `rushhour` command line: one group; each command lives in the package it drives and is
imported only when it runs, so `rushhour serve` does not pay for pandas or Locust."""

from __future__ import annotations

import importlib

import click

COMMANDS = {
    "serve": "rushhour.scenarios.cli.serve:serve",
    "run": "rushhour.scenarios.cli.run:run",
    "traffic": "rushhour.scenarios.cli.traffic:traffic",
    "report": "rushhour.scenarios.cli.report:report",
    "compare": "rushhour.scenarios.cli.report:compare",
    "node": "rushhour.scenarios.cli.node:node",
    "capacity": "rushhour.scenarios.cli.capacity:capacity",
    "worker": "rushhour.scenarios.cli.worker:worker",
    "ab": "rushhour.scenarios.cli.ab:ab",
    "schema": "rushhour.scenarios.cli.schema:schema",
    "init": "rushhour.scenarios.cli.init:init",
}


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        """Run the command; a results file that turns out to be a link is refused as bad input (exit 2)."""
        from rushhour.kernel.atomic import LinkedOutputError
        from rushhour.scenarios.cli.errors import BadInput

        try:
            return super().invoke(ctx)
        except LinkedOutputError as exc:
            raise BadInput(str(exc)) from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, _, attr = COMMANDS[cmd_name].partition(":")
        command = getattr(importlib.import_module(module), attr)
        self.add_command(command, cmd_name)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rushhour")
def cli() -> None:
    """Peak-traffic and chaos drills for inference services.

    Exit codes: 0 ok/pass, 1 SLO missed or regression, 2 bad usage or input,
    3 run aborted or measurement invalid.
    """


def _register() -> None:
    """Load every command now (tests that use click's CliRunner may call this first)."""
    for name in COMMANDS:
        cli.get_command(click.Context(cli), name)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
