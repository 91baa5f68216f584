"""Scenario files: valid ones load with defaults; every error names the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rushhour.kernel.loopback import is_loopback_url
from rushhour.scenarios.spec.model import ScenarioError, load_scenario

BASE = {"name": "x", "traffic": {"model": "constant:5", "duration": "10s"}}


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("bundled", ["promo-day", "smoke", "nightly"])
def test_spec_bundled_scenarios_load(bundled: str) -> None:
    scenario = load_scenario(bundled)
    assert scenario.name == bundled and scenario.slos and scenario.cost is not None


def test_spec_defaults_filled_in(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, BASE))
    assert scenario.target.embedded is not None
    assert scenario.load.processes == 1 and scenario.load.max_lag_p99_ms == 50
    assert scenario.traffic.duration_s == 10.0 and scenario.traffic.start_clock_s == 0.0


@pytest.mark.parametrize(("patch", "field", "words"), [
    ({"traffic": {"model": "m", "time_scale": 0}}, "traffic.time_scale", "must be > 0"),
    ({"traffic": {"model": "m", "duration": "soon"}}, "traffic.duration", "not a duration"),
    ({"traffic": {"model": "m", "start_clock": "25:99"}}, "traffic.start_clock", "clock time"),
    ({"traffic": {"model": "m", "rate_scale": 2, "peak_rps": 5}}, "traffic", "not both"),
    ({"load": {"processes": 0}}, "load.processes", ">= 1"),
    ({"load": {"languages": ["english"]}}, "load.languages", "language pair"),
    ({"target": {"url": "ftp://x"}}, "target", "http://"),
    ({"target": {}}, "target", "exactly one"),
    ({"slos": [{"name": "p", "kind": "latency"}]}, "slos[0]", "needs percentile"),
    ({"chaos": [{"at": "noon", "experiment": "e.json"}]}, "chaos[0].at", "clock time"),
    ({"stop_conditions": [{"error_rate_over": 2}]}, "stop_conditions[0].error_rate_over", "1"),
    ({"surprise": 1}, "surprise", "is not a known field"),
    ({"slos": [{"name": "p99", "kind": "availability", "objective": 0.99},
               {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 500}]},
     "slos", "SLO names must be unique; repeated: p99"),
])
def test_spec_error_names_file_and_field(tmp_path: Path, patch: dict, field: str, words: str) -> None:
    path = _write(tmp_path, {**BASE, **patch})
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}")
    assert words in message


def test_spec_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such scenario"):
        load_scenario(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(bad)


@pytest.mark.parametrize(("url", "loopback"), [
    ("http://127.0.0.1:8000", True), ("http://127.9.9.9", True), ("http://[::1]:80", True),
    ("http://localhost:8000", True), ("http://[fd00::1]", False), ("https://example.com", False),
    ("http://0.0.0.0:8000", False),
])
def test_spec_loopback_detection(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


def test_chaos_entry_takes_an_expected_recovery_on_the_scenario_clock() -> None:
    from rushhour.scenarios.spec.model import ChaosEntry

    assert ChaosEntry(at="20:10", experiment="gpu-node-loss.json", expect_recovery="10m").expect_recovery == "10m"
    with pytest.raises(ValueError, match="duration"):
        ChaosEntry(at="20:10", experiment="gpu-node-loss.json", expect_recovery="soon")
