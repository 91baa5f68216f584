"""A search's answer as capacity.json states it: what limited it, said in words."""

from __future__ import annotations

from rushhour.scenarios.capacity.record import condition_entry
from rushhour.scenarios.capacity.search import SearchResult, SearchSettings, StepVerdict, search


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


def test_record_a_search_from_a_known_failure_says_where_it_failed() -> None:
    """A re-measure that started from the check step's failure at 70.2 and found no lower one."""
    known = StepVerdict(70.2, "fail", "p95-batch", "a 20 s step at 70.2 req/s missed p95-batch")

    def step(rate: float) -> StepVerdict:
        return StepVerdict(rate, "pass")

    settings = SearchSettings(min_rps=20, max_rps=70.2, precision=0.1, growth=1.0999)
    entry = condition_entry("n-1", search(step, settings, start_rps=60.0, into=SearchResult.after(known)), [],
                            require_rps=None, wall_s=1.0)
    assert entry["bracket"][1] == 70.2 and entry["limiting_slo"] == "p95-batch" and not entry["ceiling"]
    assert "fails at 70.2 in the check step, limited by p95-batch" in entry["summary"]
    assert entry["known_fail"] == {"rate_rps": 70.2, "limiting": "p95-batch", "reason": known.reason}
    assert entry["capacity_rps"] is not None and entry["capacity_rps"] < 70.2
