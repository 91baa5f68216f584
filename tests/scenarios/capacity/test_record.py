"""A search's answer as capacity.json states it: what limited it, said in words."""

from __future__ import annotations

from scenarios.capacity.record import condition_entry
from scenarios.capacity.search import SearchSettings, StepVerdict, search


def _entry(capacity: float, generator_limit: float) -> dict:
    def step(rate: float) -> StepVerdict:
        if rate > generator_limit:
            return StepVerdict(rate, "invalid", "generator", "schedule lag P99 61.9 ms is above the 50 ms limit")
        return StepVerdict(rate, "pass" if rate <= capacity else "fail", None if rate <= capacity else "p99")

    settings = SearchSettings(min_rps=20, max_rps=120, precision=0.1, growth=1.0999, generator_limits=True)
    return condition_entry("n-1", search(step, settings, start_rps=88.9), [], require_rps=None, wall_s=1.0)


def test_record_a_calibration_limited_by_the_generator_says_so_and_stays_usable() -> None:
    entry = _entry(500.0, 85.0)
    assert entry["generator_limit"] == 88.9 and not entry["generator_bound"] and not entry["ceiling"]
    assert entry["limiting_slo"] is None and "limited by the load generator" in entry["summary"]
    assert entry["capacity_rps"] is not None and entry["capacity_rps"] <= 85.0


def test_record_a_service_limit_below_the_generator_names_its_slo() -> None:
    entry = _entry(60.0, 85.0)
    assert entry["limiting_slo"] == "p99" and "limited by p99" in entry["summary"]
    assert entry["generator_limit"] == 88.9  # seen on the way down, but not what limits the figure
