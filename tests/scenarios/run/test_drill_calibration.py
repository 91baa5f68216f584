"""The calibration step's finding is written into the drill's events.jsonl as its own event."""

from __future__ import annotations

import json
from pathlib import Path

from rushhour.scenarios.run.drill import Drill
from rushhour.scenarios.spec.model import parse_scenario
from rushhour.scenarios.spec.peak import Calibration
from rushhour.scenarios.spec.plan import build_plan, pin_rate_scale, with_calibration

CALIBRATION = Calibration(factor=0.5, condition="n-1", capacity_rps=40.0, peak_rps=20.0, note="cached", key="k")


def _events(tmp_path: Path, *, calibrated: bool) -> list[dict[str, object]]:
    data = {"name": "t", "target": {"url": "http://127.0.0.1:9"},
            "traffic": {"model": "promo-day", "time_scale": 360, "start_clock": "06:00", "duration": "10s",
                        "peak_rps": "0.5x n-1 capacity" if calibrated else 5}}
    scenario = parse_scenario(data, source="t.yaml")
    if calibrated:
        scenario = with_calibration(scenario, CALIBRATION, source="t.yaml")
    scenario = pin_rate_scale(scenario, source="t.yaml", base_dir=tmp_path)
    drill = Drill(build_plan(scenario, source="t.yaml", base_dir=tmp_path), tmp_path)
    drill._open_events()  # the drill's first events, written as its load starts
    assert drill.events is not None
    drill.events.close()
    return [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]


def test_drill_writes_the_calibration_it_was_planned_with(tmp_path: Path) -> None:
    events = _events(tmp_path, calibrated=True)
    assert [e["type"] for e in events] == ["run_start", "calibration"]
    assert {k: events[1][k] for k in ("factor", "condition", "capacity_rps", "peak_rps")} == {
        "factor": 0.5, "condition": "n-1", "capacity_rps": 40.0, "peak_rps": 20.0}


def test_drill_without_a_relative_peak_writes_no_calibration(tmp_path: Path) -> None:
    assert [e["type"] for e in _events(tmp_path, calibrated=False)] == ["run_start"]
