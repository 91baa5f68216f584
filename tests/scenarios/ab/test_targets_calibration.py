"""`rushhour ab` with a relative peak and a baseline that is a reference server booted here
(`embedded`, `embedded:CONFIG.yaml`): calibrated on that very server, cached under its key as
`rushhour run` caches a scenario whose target is that server.

The user's case: the nightly gate compares `embedded:baseline.yaml` with `embedded:candidate.yaml`
on a scenario whose peak is "0.5x capacity", or a scenario written for the team's service at a
URL. The calibration's check step must load the baseline's server (its config, its nodes), never
the scenario's own target, and the dry run boots nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.ab.targets import RateTarget, parse_target, rate_target
from rushhour.scenarios.capacity import calibrate, freshness
from rushhour.scenarios.capacity.calibrate import cache_dir, calibration_key
from rushhour.scenarios.cli.ab import ab, prepare_night
from rushhour.scenarios.run.embedded import EmbeddedServer
from rushhour.scenarios.spec.model import EmbeddedTarget, Scenario, load_scenario

CACHED_RPS = 20.0
UNUSED_URL = "http://127.0.0.1:9"  # the scenario's own service: never contacted


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
def nothing_booted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmbeddedServer, "start", lambda self: pytest.fail("a reference server was booted"))


def _files(tmp_path: Path, peak: str, target: dict[str, Any], threshold_ms: int = 400) -> tuple[Path, Path]:
    """The scenario and a baseline server config (a smaller cache) beside it."""
    config = tmp_path / "baseline.yaml"
    config.write_text(yaml.safe_dump({"max_chars": 4000}))
    data = {"name": "abembedded", "traffic": {"model": "constant:1", "peak_rps": peak, "duration": "8s", "seed": 3},
            "target": target, "load": {"max_lag_p99_ms": 250},
            "slos": [{"name": "p95", "kind": "latency", "percentile": 95, "threshold_ms": threshold_ms}]}
    path = tmp_path / "abembedded.yaml"
    path.write_text(yaml.safe_dump(data))
    return path, config


def _on(spec: Scenario, embedded: EmbeddedTarget) -> Scenario:
    return spec.model_copy(update={"target": spec.target.model_copy(update={"url": None, "embedded": embedded})})


def _plant(path: Path, embedded: EmbeddedTarget, capacity_rps: float = CACHED_RPS) -> str:
    """A cached capacity for the scenario on `embedded`, keyed as `rushhour run` keys a scenario whose target it is."""
    key, _ = calibration_key(_on(load_scenario(path), embedded), "none", source=str(path), base_dir=path.parent)
    cache_dir().mkdir(parents=True, exist_ok=True)
    (cache_dir() / f"{key}.json").write_text(json.dumps({"key": key, "capacity_rps": capacity_rps}))
    return key


def test_rate_target_is_the_baseline_whatever_it_is(tmp_path: Path) -> None:
    path, config = _files(tmp_path, "0.5x capacity", {"url": UNUSED_URL})
    spec = load_scenario(path)
    baseline = parse_target("baseline", f"embedded:{config}", spec, allow_remote=False)
    assert rate_target(baseline, spec) == RateTarget(embedded=baseline.embedded)
    assert baseline.embedded is not None and baseline.embedded.config == str(config.resolve())
    url = parse_target("baseline", "http://127.0.0.1:8000", spec, allow_remote=False)
    assert rate_target(url, spec) == RateTarget(url="http://127.0.0.1:8000")
    absolute = spec.model_copy(update={"traffic": spec.traffic.model_copy(update={"peak_rps": 5.0})})
    assert rate_target(baseline, absolute) == RateTarget()


@pytest.mark.usefixtures("nothing_booted")
def test_the_check_step_loads_the_baselines_config_server_and_the_peak_comes_from_its_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, config = _files(tmp_path, "0.5x capacity", {"url": UNUSED_URL})
    baseline = parse_target("baseline", f"embedded:{config}", load_scenario(path), allow_remote=False)
    assert baseline.embedded is not None
    key = _plant(path, baseline.embedded)
    checked: list[Any] = []

    def run_capacity(job: Any, say: Any) -> dict[str, Any]:
        checked.append(job)
        step = {"offered_rps": job.start_rps, "passed": True, "verdict": "pass", "limiting": None, "reason": "r",
                "slos": [{"name": "p95", "decision": "met"}]}
        return {"steps": [step], "conditions": [], "aborted": None}

    monkeypatch.setattr(calibrate, "_run_capacity", run_capacity)
    plan, targets, _ = prepare_night(str(path), f"embedded:{config}", "embedded", protocol=None, duration=None,
                                     seed=3, trials=None, interleave="requests", allow_remote=False)
    assert [(job.target_url, job.scenario.target.embedded, job.start_rps) for job in checked] == [
        (None, baseline.embedded, CACHED_RPS)]
    calibration = plan.scenario.traffic.calibration
    assert calibration is not None and calibration.key == key
    assert calibration.capacity_rps == CACHED_RPS and calibration.peak_rps == 10.0
    assert [t.embedded for t in targets] == [baseline.embedded, EmbeddedTarget()]


@pytest.mark.usefixtures("nothing_booted")
def test_a_dry_run_shows_the_rate_calibrated_on_the_embedded_baseline_and_boots_nothing(tmp_path: Path) -> None:
    path, config = _files(tmp_path, "0.5x capacity", {"embedded": {"nodes": 2}})
    args = [str(path), "--baseline", f"embedded:{config}", "--candidate", "embedded", "--dry-run"]
    first = CliRunner().invoke(ab, args)
    assert first.exit_code == 0, first.output
    rate = next(line for line in first.output.splitlines() if line.startswith("rate "))
    assert "calibrated on the baseline" in rate and "not measured on this machine yet" in rate
    embedded = parse_target("baseline", f"embedded:{config}", load_scenario(path), allow_remote=False).embedded
    assert embedded is not None and embedded.nodes == 2  # the scenario's settings, the config file's server
    _plant(path, embedded)
    again = CliRunner().invoke(ab, args)
    assert again.exit_code == 0, again.output
    rate = next(line for line in again.output.splitlines() if line.startswith("rate "))
    assert f"= 10 req/s of {CACHED_RPS:g} (measured" in rate and "cached, not checked" in rate


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.xdist_group("cpu-b")
def test_the_check_step_really_boots_the_baselines_config_and_holds(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end, at the smallest settings: one node, a 3 s check step at a planted 4 req/s; the
    server booted is the one the baseline's config file describes (about 12 s on a 2-core VM)."""
    monkeypatch.setattr(freshness, "CHECK_STEP_S", 3.0)
    path, config = _files(tmp_path, "0.5x capacity", {"embedded": {"nodes": 1}}, threshold_ms=2000)
    baseline = parse_target("baseline", f"embedded:{config}", load_scenario(path), allow_remote=False)
    assert baseline.embedded is not None
    key = _plant(path, baseline.embedded, capacity_rps=4.0)
    booted: list[list[str]] = []
    start = EmbeddedServer.start

    def recorded(server: EmbeddedServer) -> None:
        booted.append(server.argv())
        start(server)

    monkeypatch.setattr(EmbeddedServer, "start", recorded)
    plan, _, _ = prepare_night(str(path), f"embedded:{config}", "embedded", protocol=None, duration=None,
                               seed=3, trials=None, interleave="requests", allow_remote=False)
    assert len(booted) == 1 and str(config.resolve()) in booted[0] and "--nodes" in booted[0]
    calibration = plan.scenario.traffic.calibration
    assert calibration is not None and calibration.key == key and calibration.peak_rps == 2.0
    assert calibration.check is not None and calibration.check.startswith("a 3 s step at 4 req/s")
