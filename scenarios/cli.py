"""The `rushhour` command line: one group, each command owned by the package it drives."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rushhour")
def cli() -> None:
    """Peak-traffic and chaos drills for inference services.

    Exit codes: 0 ok/pass, 1 SLO missed or regression, 2 bad usage or input,
    3 run aborted or measurement invalid.
    """


def _register() -> None:
    from reference_server.cli import serve
    from reports.cli import compare, report
    from scenarios.run_cli import run
    from traffic_models.cli import traffic

    for command in (serve, run, traffic, report, compare):
        cli.add_command(command)


def main() -> None:
    _register()
    cli()


if __name__ == "__main__":
    main()
