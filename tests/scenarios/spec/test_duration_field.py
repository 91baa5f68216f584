"""`traffic.duration` is a length of time of at least a second: a boolean, a list or a
sub-second value is refused by name, exit 2, and union members never show in the location."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.main import _register, cli

SCENARIO = 'name: x\ntraffic: {{model: "constant:3", duration: {duration}}}\n'


def _dry_run(tmp_path: Path, duration: str, *flags: str) -> tuple[Path, int, str]:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(duration=duration))
    _register()
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run", "--no-probe", *flags])
    return path, result.exit_code, result.output


@pytest.mark.parametrize(("duration", "words"), [
    ("true", 'true is not a duration; write e.g. "180s", "3m" or "1h".'),
    ("[1]", '[1] is not a duration; write e.g. "180s", "3m" or "1h".'),
    ("0.0001s", '"0.0001s" is 0.0001 s; a drill runs for at least 1 s.'),
    ("0", '"0" is 0 s; a drill runs for at least 1 s.'),
])
def test_duration_field_refuses_what_is_no_drill_length(tmp_path: Path, duration: str, words: str) -> None:
    path, code, output = _dry_run(tmp_path, duration)
    assert code == 2 and f"{path}: traffic.duration: {words}" in output
    assert ".str" not in output and ".float" not in output


def test_duration_field_from_the_command_line_is_held_to_a_second(tmp_path: Path) -> None:
    path, code, output = _dry_run(tmp_path, "10s", "--duration", "500ms")
    assert code == 2 and f'{path} (with command-line overrides): traffic.duration: "500ms" is 0.5 s' in output


def test_duration_field_of_one_second_runs(tmp_path: Path) -> None:
    _, code, output = _dry_run(tmp_path, "1s")
    assert code == 0, output


def test_slo_message_keeps_its_acronym(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text('name: x\ntraffic: {model: "constant:3", duration: 10s}\nslos: [{name: p99, kind: latency}]\n')
    _register()
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run", "--no-probe"])
    assert result.exit_code == 2
    assert f'{path}: slos[0]: SLO "p99" of kind "latency" needs percentile, threshold_ms.' in result.output
