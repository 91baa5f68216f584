"""`rushhour worker` refuses a bad flag with exit 2 before it joins anything, and a join that
never ran leaves no scratch folder behind."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.worker import worker

CLOSED_MASTER = "127.0.0.1:1"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(worker, ["--connect-timeout", "1", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(("master", "why"), [
    ("http://127.0.0.1:5557", "without a scheme"),
    ("::1:5557", "an IPv6 address goes in brackets"),
    ("host name:5557", 'the host "host name" is neither an IP address nor a hostname'),
    ("127.0.0.1:5557:1", "only one port may follow the host"),
    ("127.0.0.1:99999", 'the port "99999" is not a number from 1 to 65535'),
    ("[zz]:5557", '"zz" is not an IPv6 address'),
    ("999.0.0.1:5557", 'the host "999.0.0.1" is not an IPv4 address'),
])
def test_worker_refuses_a_master_that_is_not_host_port(master: str, why: str) -> None:
    code, output = _invoke("--master", master)
    assert code == 2
    assert f'--master: "{master}" is not HOST:PORT' in output and why in output
    assert "Traceback" not in output and "joining" not in output


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_worker_refuses_a_connect_timeout_that_is_not_finite(value: str) -> None:
    code, output = _invoke("--master", CLOSED_MASTER, "--connect-timeout", value)
    assert code == 2 and f'"{value}" is not a finite number' in output


@pytest.mark.parametrize(("host", "why"), [
    ("garbage", '"garbage" is not an IP address'),
    ("8.8.8.8", '"8.8.8.8" is not a private (non-loopback) address'),
])
def test_worker_refuses_an_allowed_host_a_scenario_may_not_name(host: str, why: str) -> None:
    code, output = _invoke("--master", CLOSED_MASTER, "--allowed-host", host)
    assert code == 2 and f"--allowed-host: {why}" in output and "joining" not in output


def test_worker_refuses_an_auth_file_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "token"
    code, output = _invoke("--master", CLOSED_MASTER, "--auth-file", str(missing))
    assert code == 2 and f'--auth-file: "{missing}" could not be read' in output and "joining" not in output


def test_worker_refuses_an_auth_env_that_is_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_SERVICE_UNSET_TOKEN", raising=False)
    code, output = _invoke("--master", CLOSED_MASTER, "--auth-env", "MY_SERVICE_UNSET_TOKEN")
    assert code == 2 and '--auth-env: the variable "MY_SERVICE_UNSET_TOKEN" is not set' in output


def test_worker_refuses_an_auth_env_that_is_no_variable_name() -> None:
    code, output = _invoke("--master", CLOSED_MASTER, "--auth-env", "bad var!")
    assert code == 2 and '--auth-env: "bad var!" is not a valid variable name' in output


def test_worker_refuses_the_header_scheme_without_its_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "a-credential-value")
    code, output = _invoke("--master", CLOSED_MASTER, "--auth-env", "MY_SERVICE_TOKEN", "--auth-scheme", "header")
    assert code == 2 and "--auth-scheme header needs --auth-header" in output
    assert "a-credential-value" not in output


def test_worker_refuses_a_ca_bundle_that_is_not_pem(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(b"\x00\xffnot a certificate\n")
    code, output = _invoke("--master", CLOSED_MASTER, "--ca-bundle", str(bundle))
    assert code == 2 and f'--ca-bundle: "{bundle}" holds no PEM certificates' in output and "joining" not in output


def test_worker_removes_its_scratch_folder_when_no_master_welcomed_it(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    code, output = _invoke("--master", f"127.0.0.1:{port}")
    assert code == 3 and "no master welcomed this worker" in output
    assert list(tmp_path.glob("rushhour-worker-*")) == []


@pytest.mark.parametrize("host", ["https://api.example.com", "api.example.com:443", "a b"])
def test_worker_refuses_an_allow_target_that_is_not_a_bare_host(host: str) -> None:
    code, output = _invoke("--master", CLOSED_MASTER, "--allow-target", host)
    assert code == 2 and "--allow-target" in output and "without scheme, port or path" in output
