"""The calibration step: on its own (`rushhour capacity --calibrate`), a dry run measures nothing; in
`rushhour run`, after the overrides, on the target the drill loads."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from benchmarks.mdc import true_capacity
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.capacity import calibrate as calibrate_module
from rushhour.scenarios.cli.capacity import capacity
from rushhour.scenarios.cli.run import run
from rushhour.scenarios.run.embedded import EmbeddedServer
from rushhour.scenarios.run.overhead import SKIP_ENV
from tests.support.waiting import wait_for_http

ROOT = Path(__file__).resolve().parents[3]
OWN_SERVICE = ROOT / "tests" / "support" / "own_service.py"
OWN_WORKERS, OWN_SERVICE_MS, OWN_THRESHOLD_MS = 2, 40.0, 200.0


def test_calibrate_dry_run_names_the_placeholder_and_boots_nothing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(capacity, [str(ROOT / "scenarios" / "promo-day.yaml"), "--calibrate", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "capacity [n-1]:" in result.output and "not measured on this machine yet" in result.output
    assert "promo-day: peak_rps 0.6x n-1 capacity = " in result.output
    assert not (tmp_path / "state").exists()  # no search ran, nothing was cached


def _own_scenario(tmp_path: Path, url: str, peak: str = "0.8x capacity") -> Path:
    data = {
        "name": "own", "traffic": {"model": "constant:1", "peak_rps": peak, "duration": "8s", "seed": 5},
        "target": {"url": url},
        "load": {"max_lag_p99_ms": 250},  # a shared 2-core test machine: judge the service, not the neighbours
        "slos": [{"name": "p95", "kind": "latency", "percentile": 95, "threshold_ms": OWN_THRESHOLD_MS}],
    }
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def own_service() -> Iterator[str]:
    """The stand-in service: 2 workers of 40 ms each, so P95 under 200 ms holds up to about 42 req/s."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(OWN_SERVICE), str(port), str(OWN_WORKERS), str(OWN_SERVICE_MS)],
                            stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_for_http(f"{url}/healthz", timeout_s=10.0, proc=proc)
        yield url
    finally:
        stop_process(proc, grace_s=2.0)


def _served(url: str) -> int:
    return int(httpx.get(f"{url}/count", timeout=5.0, trust_env=False).text)


def test_run_with_a_constant_traffic_override_never_calibrates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(run, [str(ROOT / "scenarios" / "promo-day.yaml"), "--traffic", "constant:5",
                                      "--duration", "10s", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "calibrat" not in result.output and "capacity" not in result.output
    assert not (tmp_path / "state").exists()


@pytest.mark.slow
def test_run_calibrates_an_n_minus_one_peak_on_the_target_url_and_refuses_what_it_cannot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_service: str) -> None:
    """--target applies before calibration: the N-1 peak is asked of the URL, whose service has no
    admin API, so it is refused with what to write instead; the bundled server is never booted."""
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("RUSHHOUR_ADMIN_TOKEN", raising=False)
    monkeypatch.setattr(EmbeddedServer, "start", lambda self: pytest.fail("the bundled server was booted"))
    result = CliRunner().invoke(run, [str(ROOT / "scenarios" / "promo-day.yaml"), "--target", own_service])
    assert result.exit_code == 2, result.output
    assert f'which "{own_service}" does not offer here' in result.output and 'write "0.6x capacity"' in result.output
    assert _served(own_service) == 0


def test_run_refuses_a_remote_target_before_calibrating_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(run, [str(_own_scenario(tmp_path, "http://192.0.2.7:8000")), "--dry-run"])
    assert result.exit_code == 2 and "is not on this machine" in result.output
    assert not (tmp_path / "state").exists()


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.xdist_group("cpu-a")
def test_run_measures_a_relative_peak_on_the_url_it_loads_and_capacity_agrees(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_service: str) -> None:
    """A service of known capacity (M/D/2, 40 ms: P95 under 200 ms up to about 42 req/s) is
    calibrated itself: it receives the calibration's requests, the figure lands near its truth,
    the bundled server is never booted, and `rushhour capacity --calibrate --target` reads the same
    figure back once it was confirmed and cached."""
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv(SKIP_ENV, "1")
    monkeypatch.setattr(calibrate_module, "CALIBRATION_STEPS_S", (10.0, 20.0))  # short windows: a test, not a drill
    monkeypatch.setattr(EmbeddedServer, "start", lambda self: pytest.fail("the bundled server was booted"))
    scenario = _own_scenario(tmp_path, "http://127.0.0.1:9")
    out = tmp_path / "out"
    result = CliRunner().invoke(run, [str(scenario), "--target", own_service, "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    assert f"calibration: the capacity behind peak_rps 0.8x capacity on {own_service}" in result.output
    truth = true_capacity(OWN_THRESHOLD_MS, workers=OWN_WORKERS, service_ms=OWN_SERVICE_MS, percentile=95)
    calibration = json.loads((out / "summary.json").read_text())["scenario"]["calibration"]
    assert 0.5 * truth <= calibration["capacity_rps"] <= 1.15 * truth, (calibration, truth)
    drill_requests = len(pd.read_parquet(out / "requests.parquet"))
    assert _served(own_service) > drill_requests + 100  # the calibration's steps reached the service too
    cached = CliRunner().invoke(capacity, [str(scenario), "--calibrate", "--dry-run", "--target", own_service])
    assert cached.exit_code == 0, cached.output
    # Only a figure its second window confirmed is cached; on a busy machine the short confirmation
    # window can miss, and then the next command must not pretend the figure was kept.
    if calibration.get("confirmed") is True:
        assert f"capacity [none]: {calibration['capacity_rps']:g} req/s (of {own_service}, measured " in cached.output
    else:
        assert "capacity [none]: " in cached.output and "not measured on this machine yet" in cached.output
