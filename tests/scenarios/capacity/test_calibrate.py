"""Capacities cached per machine, server configuration and version, and relative peaks resolved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scenarios.capacity import calibrate
from scenarios.capacity.calibrate import (
    cache_dir,
    calibrated_peak,
    calibration_job,
    calibration_key,
    remember,
)
from scenarios.spec.model import Scenario, load_scenario
from scenarios.spec.peak import RelativePeak

BASE = {
    "name": "cal", "traffic": {"model": "promo-day", "time_scale": 360, "peak_rps": "0.7x capacity",
                               "start_clock": "06:00", "duration": "180s"},
    "target": {"embedded": {"nodes": 2, "max_batch_size": 8}},
    "slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000, "priority": "free"}],
}


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _scenario(tmp_path: Path, **changes: object) -> tuple[Scenario, Path]:
    data = json.loads(json.dumps(BASE))
    for dotted, value in changes.items():
        section, _, key = dotted.partition("__")
        data[section][key] = value
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path), path


def _key(scenario: Scenario, path: Path, condition: str = "none") -> str:
    return calibration_key(scenario, condition, source=str(path), base_dir=path.parent)[0]


def test_calibrate_key_changes_with_server_slos_and_condition(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    key = _key(scenario, path)
    assert key == _key(scenario, path)
    assert key != _key(scenario, path, "n-1")
    assert key != _key(*_scenario(tmp_path, target__embedded={"nodes": 3}))
    other_slo = scenario.model_copy(update={"slos": []})
    assert key != _key(other_slo, path)


def test_calibrate_needs_an_embedded_target(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    remote = scenario.model_copy(update={"target": scenario.target.model_copy(
        update={"embedded": None, "url": "http://127.0.0.1:9"})})
    with pytest.raises(ValueError, match="needs target: embedded"):
        _key(remote, path)


def _document(capacity: float | None, **extra: object) -> dict[str, object]:
    entry = {"condition": "none", "capacity_rps": capacity, "bracket": [capacity, 50.0], "summary": "s",
             "generator_bound": False, "ceiling": False, **extra}
    return {"conditions": [entry]}


def test_calibrate_remember_caches_only_full_embedded_measurements(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    job = calibration_job(scenario, "none", source=str(path), base_dir=path.parent)
    written = remember(job, _document(42.0))
    assert [p.name for p in written] == [f"{_key(scenario, path)}.json"]
    assert json.loads(written[0].read_text())["capacity_rps"] == 42.0
    assert remember(job, _document(None)) == [] and remember(job, _document(42.0, generator_bound=True)) == []
    partial = calibration_job(scenario, "none", source=str(path), base_dir=path.parent)
    object.__setattr__(partial, "slos", [])
    assert remember(partial, _document(42.0)) == []


def test_calibrate_a_cached_figure_resolves_the_peak_and_a_remeasure_starts_next_to_it(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    job = calibration_job(scenario, "none", source=str(path), base_dir=path.parent)
    remember(job, _document(40.0))
    calibration = calibrated_peak(scenario, RelativePeak(0.7, "none"), source=str(path), base_dir=path.parent)
    assert calibration.capacity_rps == 40.0 and calibration.peak_rps == 28.0 and "cached" in calibration.note
    changed, changed_path = _scenario(tmp_path, target__embedded={"nodes": 3})
    again = calibration_job(changed, "none", source=str(changed_path), base_dir=changed_path.parent)
    assert again.start_rps == pytest.approx(36.0) and again.settings.growth < 2.0


def test_calibrate_a_miss_measures_now_but_a_dry_run_never_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario, path = _scenario(tmp_path)
    measured: list[str] = []
    monkeypatch.setattr(calibrate, "_measure", lambda s, c, **_: measured.append(c) or 30.0)
    peak = RelativePeak(0.5, "n-1")
    planned = calibrated_peak(scenario, peak, source=str(path), base_dir=path.parent, dry_run=True)
    assert measured == [] and "not measured" in planned.note
    resolved = calibrated_peak(scenario, peak, source=str(path), base_dir=path.parent)
    assert measured == ["n-1"] and resolved.peak_rps == 15.0 and resolved.condition == "n-1"
    assert not any(cache_dir().glob("*.json"))  # the fake measurement cached nothing
