"""A target URL is checked for scheme, host and port before anything asks whether it is on
this machine: a bad one is refused by name, exit 2, in the file and on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.main import _register, cli

GOOD = 'name: t\ntraffic: {model: "constant:2", duration: 2s, seed: 1}\n'


def _invoke(*args: str) -> tuple[int, str]:
    _register()
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(("url", "words"), [
    ("http://127.0.0.1:abc", 'has port "abc", which is not a number from 1 to 65535.'),
    ("http://127.0.0.1:99999", 'has port "99999", which is not a number from 1 to 65535.'),
    ("http://[::1]:0", 'has port "0", which is not a number from 1 to 65535.'),
    ("http://:80", 'has no host; write e.g. "http://127.0.0.1:8000".'),
])
def test_target_url_in_the_file_with_a_bad_port_or_no_host_exits_2(tmp_path: Path, url: str, words: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD + f'target: {{url: "{url}"}}\n')
    code, output = _invoke("run", str(path), "--dry-run", "--no-probe")
    assert code == 2 and f'{path}: target.url: "{url}" {words}' in output


@pytest.mark.parametrize("command", [["run", "--no-probe"], ["capacity"]])
@pytest.mark.parametrize(("url", "words"), [
    ("http://127.0.0.1:abc", 'has port "abc", which is not a number from 1 to 65535.'),
    ("http://:80", "has no host"),
])
def test_target_url_flag_is_checked_before_the_loopback_guard(tmp_path: Path, command: list[str], url: str,
                                                              words: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD)
    code, output = _invoke(command[0], str(path), "--target", url, "--dry-run", *command[1:])
    assert code == 2 and f'{path}: --target: "{url}" {words}' in output
    assert "not on this machine" not in output
