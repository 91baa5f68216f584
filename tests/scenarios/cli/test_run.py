"""`rushhour run` input handling: bad input exits 2, remote targets refused, dry run sends nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from scenarios.cli.run import run


def _scenario(tmp_path: Path, **extra: object) -> Path:
    data = {"name": "t", "traffic": {"model": "constant:5", "duration": "10s"}, **extra}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(run, list(args))
    return result.exit_code, result.output


def test_run_cli_bad_field_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    path = _scenario(tmp_path, load={"max_lag_p99_ms": -1})
    code, output = _invoke(str(path), "--dry-run")
    assert code == 2
    assert f"{path}: load.max_lag_p99_ms" in output


def test_run_cli_unknown_traffic_model_exits_2(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--traffic", "constant:-3", "--dry-run")
    assert code == 2 and "traffic.model" in output


def test_run_cli_bad_duration_flag_exits_2(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--duration", "forever", "--dry-run")
    assert code == 2 and "--duration" in output


def test_run_cli_missing_experiment_exits_2(tmp_path: Path) -> None:
    path = _scenario(tmp_path, chaos=[{"at": "00:00:05", "experiment": "nowhere.json"}])
    code, output = _invoke(str(path), "--dry-run")
    assert code == 2 and "chaos[0].experiment" in output


# No test sends traffic anywhere; the addresses are private-range IPv6 literals and reserved names,
# so even a broken guard could not reach a real host from here.
@pytest.mark.parametrize("url", ["http://[fd00::1]:8000", "https://gpu-gateway.example.com"])
def test_run_cli_refuses_non_loopback_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = _invoke(str(_scenario(tmp_path)), "--target", url)  # not a dry run: refused anyway
    assert code == 2 and "--allow-remote" in output and url in output
    assert not (tmp_path / "results").exists()


def test_run_cli_refuses_non_loopback_in_file(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path, target={"url": "http://[fe80::1]:8000"})), "--dry-run")
    assert code == 2 and "target.url" in output


def test_run_cli_allow_remote_dry_run(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--target", "http://gpu-gateway.example.com:8000",
                           "--allow-remote", "--dry-run")
    assert code == 0 and "http://gpu-gateway.example.com:8000" in output


def test_run_cli_dry_run_prints_plan_and_touches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = _invoke("promo-day", "--dry-run")
    assert code == 0, output
    assert "requests" in output and "scheduled" in output and "peak" in output
    assert "phases" in output and "peak" in output
    assert "(19:10:00 model clock)  gpu-node-loss" in output and "131.7 s" in output and "held 45m = 7.5 s" in output
    assert list(tmp_path.iterdir()) == []


def test_run_cli_overrides_show_in_plan(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--traffic", "constant:20", "--duration", "30s",
                           "--seed", "3", "--processes", "2", "--dry-run")
    assert code == 0, output
    assert "constant:20" in output and "seed 3" in output and "2 Locust process(es)" in output
    assert "duration   30 s" in output
