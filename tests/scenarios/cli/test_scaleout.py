"""Where a master listens and with what secret: a bind beyond loopback without the cluster
secret is refused with how to give one; a secret must be long enough to be one."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.cli.run import run
from rushhour.scenarios.cli.scaleout import master_settings
from rushhour.scenarios.cli.worker import worker
from rushhour.scenarios.generator.clusterauth import SECRET_ENV

SCENARIO = """\
name: scaleout
traffic: {model: "constant:2", duration: 2s, seed: 1}
target: {url: "http://127.0.0.1:9"}
"""


def test_master_settings_default_bind_is_loopback_and_needs_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    assert master_settings("127.0.0.1:5557", None) == {"master_bind": ("127.0.0.1", 5557), "cluster_secret": None}


def test_master_settings_refuses_a_wide_bind_without_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    for bind in ("0.0.0.0:5557", "10.0.0.5:5557", "[::]:5557"):
        with pytest.raises(BadInput) as caught:
            master_settings(bind, None)
        assert "listens beyond this machine" in str(caught.value) and SECRET_ENV in str(caught.value)


def test_master_settings_takes_the_secret_from_a_file_or_the_environment(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, "from-the-environment-0123")
    assert master_settings("0.0.0.0:5557", None)["cluster_secret"] == "from-the-environment-0123"
    (tmp_path / "secret").write_text("  from-a-file-0123456789\n")
    assert master_settings("0.0.0.0:5557", tmp_path / "secret")["cluster_secret"] == "from-a-file-0123456789"


def test_a_short_or_missing_secret_file_is_refused_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "short").write_text("abc\n")
    with pytest.raises(BadInput, match="has 3 characters; use at least 16"):
        master_settings("0.0.0.0:5557", tmp_path / "short")
    with pytest.raises(BadInput, match='--secret-file: ".*nope" could not be read'):
        master_settings("0.0.0.0:5557", tmp_path / "nope")


def test_run_with_workers_on_a_wide_bind_without_a_secret_exits_2(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    (tmp_path / "s.yaml").write_text(SCENARIO)
    result = CliRunner().invoke(run, [str(tmp_path / "s.yaml"), "--workers", "2", "--master-bind", "0.0.0.0:5557",
                                      "--no-probe", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "--secret-file" in result.output
    assert not (tmp_path / "out").exists()


def test_worker_refuses_an_unreadable_secret_file_before_joining(tmp_path: Path) -> None:
    result = CliRunner().invoke(worker, ["--master", "127.0.0.1:5557", "--secret-file", str(tmp_path / "none")])
    assert result.exit_code == 2 and "could not be read" in result.output
