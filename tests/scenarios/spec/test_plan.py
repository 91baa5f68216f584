"""The plan keeps how its schedule is drawn and the facts about it, not the schedule itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.scenarios.spec.model import ScenarioError, parse_scenario
from rushhour.scenarios.spec.plan import build_plan, describe, peak_rate
from rushhour.traffic_models import generate_schedule, load_traffic_model

TRAFFIC = {"model": "promo-day", "time_scale": 360, "start_clock": "06:00", "duration": "180s", "seed": 5}


def test_plan_facts_and_schedule_are_those_of_the_whole_schedule(tmp_path: Path) -> None:
    plan = build_plan(parse_scenario({"name": "x", "traffic": TRAFFIC}, source="s"), source="s", base_dir=tmp_path)
    whole = generate_schedule(load_traffic_model("promo-day"), seed=5, time_scale=360, start_clock_s=6 * 3600.0,
                              duration_s=180.0, rate_scale=plan.rate_scale)
    assert "schedule" not in vars(plan)  # nothing drawn whole until someone asks for it
    assert plan.facts.count == len(whole) > 100 and plan.facts.peak_rps == peak_rate(whole)
    assert f"requests   {len(whole)} scheduled" in describe(plan)
    assert plan.schedule.equals(whole)


def test_a_traffic_error_still_surfaces_when_the_plan_is_built(tmp_path: Path) -> None:
    scenario = parse_scenario({"name": "x", "traffic": {**TRAFFIC, "seed": -1}}, source="s")
    with pytest.raises(ScenarioError, match="s: traffic: seed must be a non-negative"):
        build_plan(scenario, source="s", base_dir=tmp_path)
