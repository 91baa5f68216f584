"""What the command-line tests share: a small scenario file, and a `rushhour` command invoked in-process."""

from __future__ import annotations

from pathlib import Path

import click
import yaml
from click.testing import CliRunner


def scenario_file(tmp_path: Path, **extra: object) -> Path:
    """`tmp_path/t.yaml`: a scenario of 10 s at a constant 5 requests a second, with `extra`'s top-level keys."""
    data = {"name": "t", "traffic": {"model": "constant:5", "duration": "10s"}, **extra}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def invoke(command: click.Command, *args: str) -> tuple[int, str]:
    """`command` run with `args` by click's test runner: its exit code and what it printed."""
    result = CliRunner().invoke(command, list(args))
    return result.exit_code, result.output
