"""The loopback guard lets a drill use test hosts only when its scenario names them, and
`--workers` / `rushhour worker` refuse bad addresses with a sentence.

The test host is a private IPv6 literal (fd77::1, a unique local address): every test here is a
dry run without the probe, so nothing is ever sent to it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rushhour.scenarios.cli.run import run
from rushhour.scenarios.cli.worker import worker

SCENARIO = """\
name: guard
traffic: {{model: "constant:2", duration: 2s, seed: 1}}
target: {{url: "http://[fd77::1]:18080"}}
load: {{{load}}}
"""


def _scenario(tmp_path: Path, load: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(load=load), encoding="utf-8")
    return path


def test_guard_refuses_a_test_host_the_scenario_does_not_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(run, [str(_scenario(tmp_path, "")), "--dry-run", "--no-probe"])
    assert result.exit_code == 2
    assert '"http://[fd77::1]:18080" is not on this machine' in result.output


def test_guard_allows_a_test_host_the_scenario_names(tmp_path: Path) -> None:
    path = _scenario(tmp_path, 'allowed_hosts: ["fd77::1"]')
    result = CliRunner().invoke(run, [str(path), "--dry-run", "--no-probe"])
    assert result.exit_code == 0, result.output


def test_guard_names_only_private_non_loopback_addresses(tmp_path: Path) -> None:
    for host, why in (("8.8.8.8", "not a private"), ("127.0.0.1", "not a private"), ("box.example", "not an IP")):
        result = CliRunner().invoke(run, [str(_scenario(tmp_path, f'allowed_hosts: ["{host}"]')), "--dry-run"])
        assert result.exit_code == 2 and why in result.output, result.output


def test_workers_and_processes_exclude_each_other(tmp_path: Path) -> None:
    path = _scenario(tmp_path, 'allowed_hosts: ["fd77::1"]')
    result = CliRunner().invoke(run, [str(path), "--workers", "2", "--processes", "2", "--no-probe"])
    assert result.exit_code == 2 and "--workers and --processes exclude each other" in result.output


def test_worker_refuses_a_master_address_that_is_not_host_port() -> None:
    result = CliRunner().invoke(worker, ["--master", "10.0.0.5"])
    assert result.exit_code == 2 and '--master: "10.0.0.5" is not HOST:PORT' in result.output
