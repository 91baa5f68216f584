"""A target URL with user:password@ is refused without repeating the password, and
`load.allowed_hosts` names only private test hosts: no link-local (cloud metadata), unspecified,
multicast or reserved address."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.run import run
from rushhour.scenarios.spec.model import ScenarioError, parse_scenario


def _scenario(url: str = "http://127.0.0.1:9", allowed: tuple[str, ...] = ()) -> dict[str, object]:
    return {"name": "guard", "traffic": {"model": "constant:2", "duration": "2s", "seed": 1},
            "target": {"url": url}, "load": {"allowed_hosts": list(allowed)}}


def test_a_target_url_with_credentials_is_refused_without_echoing_them() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_scenario("http://alice:hunter2-secret@127.0.0.1:9/v1"), source="s.yaml")
    text = str(caught.value)
    assert 'url "http://***@127.0.0.1:9/v1" carries credentials' in text and "target.auth" in text
    assert "hunter2" not in text and "alice" not in text


def test_a_target_url_with_credentials_from_the_command_line_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text('name: g\ntraffic: {model: "constant:2", duration: 2s, seed: 1}\ntarget: {url: "http://127.0.0.1:9"}\n')
    result = CliRunner().invoke(run, [str(path), "--target", "http://bob:pw-0123@127.0.0.1:9", "--dry-run", "--no-probe"])
    assert result.exit_code == 2 and "carries credentials" in result.output and "pw-0123" not in result.output


@pytest.mark.parametrize(("host", "why"), [
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("224.0.0.1", "multicast"), ("ff02::1", "multicast"), ("240.0.0.1", "reserved"),
])
def test_allowed_hosts_refuses_addresses_that_are_no_test_host(host: str, why: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_scenario(allowed=(host,)), source="s.yaml")
    assert f'"{host}" is' in str(caught.value) and why in str(caught.value)


def test_allowed_hosts_still_takes_a_private_test_address() -> None:
    scenario = parse_scenario(_scenario(allowed=("10.77.1.1", "fd77::1")), source="s.yaml")
    assert scenario.load.allowed_hosts == ("10.77.1.1", "fd77::1")
