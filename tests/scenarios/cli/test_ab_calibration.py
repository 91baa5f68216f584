"""`rushhour ab` with a relative peak: calibrated on the baseline target (the candidate gets the same
rate and nothing while it is measured), never on the scenario's own target, said in ab.json and the
verdict; a baseline it cannot be calibrated on is refused with what to write instead."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner

from rushhour.kernel.contract import AB_JSON_FILE
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.capacity import freshness
from rushhour.scenarios.capacity.calibrate import cache_dir, calibration_key
from rushhour.scenarios.cli.ab import _run, ab, prepare_night
from rushhour.scenarios.run.embedded import EmbeddedServer
from rushhour.scenarios.spec.model import load_scenario
from rushhour.scenarios.spec.plan import Overrides, apply_overrides
from tests.support.waiting import wait_for_http

ROOT = Path(__file__).resolve().parents[3]
OWN_SERVICE = ROOT / "tests" / "support" / "own_service.py"
CACHED_RPS = 20.0
"""The capacity planted in the cache: the stand-in (4 workers of 20 ms) carries far more, so the
check step at it holds and no search runs."""


def _scenario(tmp_path: Path, peak: str, target: dict[str, object]) -> Path:
    data = {"name": "abcal", "traffic": {"model": "constant:1", "peak_rps": peak, "duration": "8s", "seed": 3},
            "target": target, "load": {"max_lag_p99_ms": 250},
            "slos": [{"name": "p95", "kind": "latency", "percentile": 95, "threshold_ms": 400}]}
    path = tmp_path / "abcal.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def services() -> Iterator[tuple[str, str]]:
    """Two stand-in services that count what reached them: the baseline and the candidate."""
    with ExitStack() as stack:
        urls = []
        for _ in range(2):
            port = free_port()
            proc = subprocess.Popen([sys.executable, str(OWN_SERVICE), str(port), "4", "20"], stdin=subprocess.DEVNULL)
            stack.callback(stop_process, proc, grace_s=2.0)
            urls.append(f"http://127.0.0.1:{port}")
            assert wait_for_http(f"{urls[-1]}/healthz", timeout_s=10.0, proc=proc)
        yield urls[0], urls[1]


@pytest.fixture
def no_bundled_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(EmbeddedServer, "start", lambda self: pytest.fail("the bundled server was booted"))


def _served(url: str) -> int:
    return int(httpx.get(f"{url}/count", timeout=5.0, trust_env=False).text)


def _plant(path: Path, url: str) -> None:
    """A cached capacity for the scenario on `url`, keyed as `rushhour run --target URL` keys it."""
    spec = apply_overrides(load_scenario(path), Overrides(target_url=url), str(path))
    key, _ = calibration_key(spec, "none", source=str(path), base_dir=path.parent)
    cache_dir().mkdir(parents=True)
    (cache_dir() / f"{key}.json").write_text(json.dumps({"key": key, "capacity_rps": CACHED_RPS}))


@pytest.mark.usefixtures("no_bundled_server")
def test_ab_refuses_an_n_minus_one_peak_its_baseline_url_cannot_measure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, services: tuple[str, str]) -> None:
    monkeypatch.delenv("RUSHHOUR_ADMIN_TOKEN", raising=False)
    baseline, candidate = services
    path = _scenario(tmp_path, "0.6x n-1 capacity", {"embedded": {"nodes": 1}})
    result = CliRunner().invoke(ab, [str(path), "--baseline", baseline, "--candidate", candidate, "--dry-run"])
    assert result.exit_code == 2, result.output
    assert f'which "{baseline}" does not offer here' in result.output and 'write "0.6x capacity"' in result.output
    assert _served(baseline) == _served(candidate) == 0


@pytest.mark.usefixtures("no_bundled_server")
def test_ab_calibrates_on_an_embedded_baseline_the_scenario_does_not_describe(
        tmp_path: Path, services: tuple[str, str]) -> None:
    """The file's target is the service at a URL: the relative peak is calibrated on the bundled
    server the baseline boots, never on that URL (a dry run shows it and boots nothing)."""
    path = _scenario(tmp_path, "0.5x capacity", {"url": services[0]})
    result = CliRunner().invoke(ab, [str(path), "--baseline", "embedded", "--candidate", services[1], "--dry-run"])
    assert result.exit_code == 0, result.output
    rate = next(line for line in result.output.splitlines() if line.startswith("rate "))
    assert "calibrated on the baseline" in rate and "not measured on this machine yet" in rate
    assert _served(services[0]) == 0 and _served(services[1]) == 1  # the candidate's probe alone


@pytest.mark.usefixtures("no_bundled_server")
def test_ab_refuses_a_remote_baseline_before_calibrating(tmp_path: Path, services: tuple[str, str]) -> None:
    path = _scenario(tmp_path, "0.5x capacity", {"embedded": {"nodes": 1}})
    result = CliRunner().invoke(ab, [str(path), "--baseline", "http://192.0.2.7:8000", "--candidate", services[1]])
    assert result.exit_code == 2 and "--baseline" in result.output and "--allow-remote" in result.output
    assert not (tmp_path / "state").exists() and _served(services[1]) == 0


@pytest.mark.usefixtures("no_bundled_server")
def test_ab_dry_run_shows_the_baselines_rate_and_measures_nothing(tmp_path: Path, services: tuple[str, str]) -> None:
    baseline, candidate = services
    path = _scenario(tmp_path, "0.5x capacity", {"embedded": {"nodes": 1}})
    _plant(path, baseline)
    result = CliRunner().invoke(ab, [str(path), "--baseline", baseline, "--candidate", candidate, "--dry-run"])
    assert result.exit_code == 0, result.output
    rate = next(line for line in result.output.splitlines() if line.startswith("rate "))
    assert "calibrated on the baseline" in rate and f"= 10 req/s of 20 (of {baseline}, measured" in rate
    assert _served(baseline) == 1 and _served(candidate) == 1  # each arm's probe, no calibration step


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.xdist_group("cpu-a")
@pytest.mark.usefixtures("no_bundled_server")
def test_ab_calibrates_on_the_baseline_url_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        services: tuple[str, str]) -> None:
    """The scenario's own target is the bundled server; with two URL arms the cached capacity is
    checked on the baseline alone (its check step's requests reach it, none the candidate), both
    arms are loaded at half of it, and ab.json and the verdict line say where the rate came from."""
    monkeypatch.setattr(freshness, "CHECK_STEP_S", 5.0)  # a test's check step, not a drill's
    baseline, candidate = services
    path = _scenario(tmp_path, "0.5x capacity", {"embedded": {"nodes": 1}})
    _plant(path, baseline)
    plan, targets, design = prepare_night(str(path), baseline, candidate, protocol=None, duration=None, seed=3,
                                          trials=None, interleave="requests", allow_remote=False)
    assert _served(baseline) > 30 and _served(candidate) == 0
    calibration = plan.scenario.traffic.calibration
    assert calibration is not None and calibration.capacity_rps == CACHED_RPS and calibration.peak_rps == 10.0
    assert baseline in calibration.note
    out = tmp_path / "out"
    doc = _run(plan, targets, design, {}, out, 1.1, 0.95, error_margin=0.05, calibration=None)
    written = json.loads((out / AB_JSON_FILE).read_text())
    assert written["rate"]["calibrated_on"] == "baseline" and written["rate"]["peak_rps"] == 10.0
    assert written["rate"]["text"].startswith("each arm loaded at the rate calibrated on the baseline, peak 10 req/s")
    assert doc["sentence"].endswith(f"; {written['rate']['text']}.")
    assert written["arms"]["candidate"]["attempted"] == pytest.approx(10.0 * 8, rel=0.35)
