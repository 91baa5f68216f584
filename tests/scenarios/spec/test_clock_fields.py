"""A clock field written unquoted (`start_clock: 19:00`, chaos `at: 19:00`) reaches the scenario
as YAML's base-60 integer; the error says so and shows the quoted time to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.main import _register, cli

TRAFFIC = 'name: x\ntraffic: {{model: "constant:3", duration: 10s, start_clock: {clock}}}\n'
CHAOS = 'name: x\ntraffic: {model: "constant:3", duration: 10s}\nchaos:\n  - {at: 19:00, experiment: e.json}\n'


def _dry_run(path: Path) -> tuple[int, str]:
    _register()
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run", "--no-probe"])
    return result.exit_code, result.output


@pytest.mark.parametrize(("clock", "words"), [
    ("19:00", '1140 is what YAML makes of an unquoted 19:00; write it in quotes: "19:00".'),
    ("7:05", '425 is what YAML makes of an unquoted 7:05; write it in quotes: "07:05".'),
    ("19:00:30", '68430 is what YAML makes of an unquoted 19:00:30; write it in quotes: "19:00:30".'),
    ("1900", '1900 is a number, not a time of day; write the time in quotes, e.g. "19:00".'),
])
def test_clock_fields_unquoted_start_clock_says_to_quote_it(tmp_path: Path, clock: str, words: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(TRAFFIC.format(clock=clock))
    code, output = _dry_run(path)
    assert code == 2 and f"{path}: traffic.start_clock: {words}" in output


def test_clock_fields_unquoted_chaos_time_says_to_quote_it(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(CHAOS)
    code, output = _dry_run(path)
    assert code == 2
    assert f'{path}: chaos[0].at: 1140 is what YAML makes of an unquoted 19:00; write it in quotes: "19:00".' in output
