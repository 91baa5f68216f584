"""`peak_rps: 0.7x capacity`: parsed, validated, resolved by the calibration step, and kept in scenario.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rushhour.scenarios.cli import calibration
from rushhour.scenarios.spec.model import (
    ScenarioError,
    dump_scenario,
    load_scenario,
    parse_scenario,
)
from rushhour.scenarios.spec.peak import Calibration, RelativePeak, parse_relative_peak
from rushhour.scenarios.spec.plan import build_plan, describe, pin_rate_scale

BASE: dict[str, Any] = {"name": "x", "traffic": {"model": "promo-day", "time_scale": 360, "start_clock": "06:00", "duration": "180s"}}


@pytest.mark.parametrize("text, factor, condition", [
    ("0.7x capacity", 0.7, "none"), ("0.5x n-1 capacity", 0.5, "n-1"), (" 1X Capacity ", 1.0, "none"),
    (".8x capacity", 0.8, "none"),
])
def test_peak_relative_forms(text: str, factor: float, condition: str) -> None:
    assert parse_relative_peak(text) == RelativePeak(factor, condition)  # type: ignore[arg-type]


@pytest.mark.parametrize("text, message", [
    ("lots", "neither a rate nor relative"), ("0.7x n-2 capacity", "neither a rate"), ("0x capacity", "above 0"),
    ("12x capacity", "at most 10"),
])
def test_peak_bad_values_name_the_field(text: str, message: str) -> None:
    data = {**BASE, "traffic": {**BASE["traffic"], "peak_rps": text}}
    with pytest.raises(ScenarioError, match=message) as caught:
        parse_scenario(data, source="s.yaml")
    assert "s.yaml: traffic.peak_rps" in str(caught.value)


def test_peak_is_resolved_by_the_calibration_step_and_kept_in_the_resolved_scenario(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(scenario: object, relative: RelativePeak, **_: object) -> Calibration:
        return Calibration(factor=relative.factor, condition=relative.condition, capacity_rps=40.0,
                           peak_rps=relative.factor * 40.0, note="cached", key="k")

    monkeypatch.setattr(calibration, "calibrated_peak", fake)
    said: list[str] = []
    scenario = parse_scenario({**BASE, "traffic": {**BASE["traffic"], "peak_rps": "0.7x capacity"}}, source="s")
    resolved = calibration.calibrate_scenario(scenario, source="s", base_dir=tmp_path, dry_run=False, say=said.append)
    assert said[-1] == "capacity   peak 0.7x capacity = 28 req/s of 40 (cached)"
    pinned = pin_rate_scale(resolved, source="s", base_dir=tmp_path)
    assert pinned.traffic.peak_rps is None and pinned.traffic.calibration is not None
    plan = build_plan(pinned, source="s", base_dir=tmp_path)
    assert "capacity   peak 0.7x capacity = 28 req/s of 40 (cached)" in describe(plan)
    path = tmp_path / "scenario.yaml"
    path.write_text(dump_scenario(plan.scenario, rate_scale=plan.rate_scale))
    again = load_scenario(path)
    assert again.traffic.calibration == pinned.traffic.calibration
    assert yaml.safe_load(path.read_text())["traffic"]["calibration"]["capacity_rps"] == 40.0


def test_peak_unresolved_relative_peak_cannot_be_planned(tmp_path: Path) -> None:
    scenario = parse_scenario({**BASE, "traffic": {**BASE["traffic"], "peak_rps": "0.7x capacity"}}, source="s")
    with pytest.raises(ScenarioError, match="relative to the measured capacity"):
        build_plan(scenario, source="s", base_dir=tmp_path)


def test_peak_planning_never_calibrates(tmp_path: Path) -> None:
    scenario = parse_scenario({**BASE, "traffic": {**BASE["traffic"], "peak_rps": "0.7x capacity"}}, source="s")
    with pytest.raises(ScenarioError, match="calibration step resolves it"):
        pin_rate_scale(scenario, source="s", base_dir=tmp_path)
