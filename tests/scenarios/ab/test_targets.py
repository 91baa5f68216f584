"""What a TARGET of `rushhour ab` may be."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.scenarios.ab.targets import TargetError, parse_target
from rushhour.scenarios.spec.model import load_scenario

SCENARIO = load_scenario(Path("scenarios/nightly.yaml"))


def test_target_url_on_this_machine_is_accepted() -> None:
    target = parse_target("baseline", "http://127.0.0.1:8000/", SCENARIO, allow_remote=False)
    assert target.url == "http://127.0.0.1:8000" and target.embedded is None


def test_target_remote_url_needs_allow_remote() -> None:
    with pytest.raises(TargetError, match='--candidate: "http://example.invalid:80" is not on this machine'):
        parse_target("candidate", "http://example.invalid:80", SCENARIO, allow_remote=False)
    assert parse_target("candidate", "http://example.invalid:80", SCENARIO, allow_remote=True).url


def test_target_embedded_takes_the_scenarios_settings() -> None:
    target = parse_target("baseline", "embedded", SCENARIO, allow_remote=False)
    assert target.embedded is not None and target.embedded.nodes == 2 and target.embedded.config is None


def test_target_embedded_with_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text("{}\n")
    target = parse_target("candidate", f"embedded:{config}", SCENARIO, allow_remote=False)
    assert target.embedded is not None and target.embedded.config == str(config.resolve())
    with pytest.raises(TargetError, match="does not exist"):
        parse_target("candidate", f"embedded:{tmp_path / 'nope.yaml'}", SCENARIO, allow_remote=False)


@pytest.mark.parametrize("given", ["embeded", "ftp://127.0.0.1/", "127.0.0.1:8000", ""])
def test_target_unknown_is_refused_naming_flag_and_value(given: str) -> None:
    with pytest.raises(TargetError, match=f'--baseline: "{given}" is not a target'):
        parse_target("baseline", given, SCENARIO, allow_remote=False)


@pytest.mark.parametrize(("given", "said"), [
    ("http://127.0.0.1:abc", 'has port "abc", which is not a number from 1 to 65535'),
    ("http://127.0.0.1:99999", 'has port "99999", which is not a number from 1 to 65535'),
    ("http://fd77::1", r'has an IPv6 address without brackets; a URL writes it as "http://\[fd77::1\]"'),
])
def test_target_url_with_a_bad_port_is_refused_naming_flag_and_port(given: str, said: str) -> None:
    with pytest.raises(TargetError, match=f'--candidate: "{given}" {said}'):
        parse_target("candidate", given, SCENARIO, allow_remote=False)
