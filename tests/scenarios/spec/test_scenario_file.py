"""A scenario path that is no readable text file (a directory, a pipe, binary data) is refused
with a sentence naming it, exit 2, for every command that loads scenarios."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.main import _register, cli


def _invoke(*args: str) -> tuple[int, str]:
    _register()
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize("command", [["run", "--no-probe"], ["capacity"]])
def test_scenario_file_directory_is_refused(tmp_path: Path, command: list[str]) -> None:
    folder = tmp_path / "adir"
    folder.mkdir()
    code, output = _invoke(command[0], str(folder), "--dry-run", *command[1:])
    assert code == 2 and f'"{folder}" is a directory, not a file.' in output
    assert "Traceback" not in output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
@pytest.mark.timeout(10)
def test_scenario_file_named_pipe_is_refused_without_reading_it(tmp_path: Path) -> None:
    pipe = tmp_path / "fifo.yaml"
    os.mkfifo(pipe)
    code, output = _invoke("run", str(pipe), "--dry-run", "--no-probe")
    assert code == 2 and f'"{pipe}" is not a regular file' in output


def test_scenario_file_binary_is_refused_as_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "garbage.yaml"
    path.write_bytes(b"name: \xd4\xff\x00\x81 binary")
    code, output = _invoke("run", str(path), "--dry-run", "--no-probe")
    assert code == 2 and f'"{path}" is not UTF-8 text (byte 0xd4 at offset 6)' in output
