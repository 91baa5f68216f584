"""The search on fake services: bracket, bisect, the ceiling, below the minimum, generator-bound."""

from __future__ import annotations

from typing import Any

import pytest

from rushhour.scenarios.capacity.search import MAX_RETRIES, SearchResult, SearchSettings, StepVerdict, search


def _service(capacity: float, *, generator_limit: float = float("inf")):
    tried: list[float] = []

    def step(rate: float) -> StepVerdict:
        tried.append(rate)
        if rate > generator_limit:
            return StepVerdict(rate, "invalid", "generator")
        return StepVerdict(rate, "pass" if rate <= capacity else "fail", None if rate <= capacity else "p99")

    return step, tried


def test_search_brackets_up_then_bisects_to_the_precision() -> None:
    step, tried = _service(47.0)
    result = search(step, SearchSettings(min_rps=10, max_rps=100, precision=0.05))
    assert tried[:4] == [10, 20, 40, 80]
    assert result.capacity_rps is not None and result.first_fail is not None
    assert result.capacity_rps <= 47.0 < result.first_fail
    assert (result.first_fail - result.capacity_rps) / result.capacity_rps <= 0.05
    assert result.limiting == "p99" and not result.generator_bound


def test_search_a_ten_times_bracket_to_five_percent_takes_about_nine_steps() -> None:
    step, tried = _service(33.3)
    search(step, SearchSettings(min_rps=5, max_rps=50, precision=0.05))
    assert len(tried) <= 10  # nine, and the confirmation at the capacity


def test_search_ceiling_when_every_rate_passes() -> None:
    step, tried = _service(1000.0)
    result = search(step, SearchSettings(min_rps=10, max_rps=30))
    assert tried == [10, 20, 30, 30] and result.ceiling and result.capacity_rps == 30 and result.confirmed


def test_search_below_the_minimum_when_the_first_step_fails() -> None:
    step, tried = _service(3.0)
    result = search(step, SearchSettings(min_rps=10, max_rps=100))
    assert tried == [10] and result.below_min and result.capacity_rps is None


def test_search_generator_bound_answers_at_least_the_last_pass() -> None:
    step, tried = _service(500.0, generator_limit=50.0)
    result = search(step, SearchSettings(min_rps=10, max_rps=1000))
    assert result.generator_bound and result.capacity_rps == 40 and tried == [10, 20, 40, 80]


def test_search_with_generator_limits_walks_down_from_a_first_step_it_could_not_drive() -> None:
    """A calibration's first step at a rate the generator cannot drive is a failure of the
    machine: the search goes on below it and reports a confirmed pass under that rate."""
    step, tried = _service(500.0, generator_limit=85.0)
    settings = SearchSettings(min_rps=20, max_rps=120, precision=0.1, growth=1.0999, generator_limits=True)
    result = search(step, settings, start_rps=88.9)
    assert tried[0] == 88.9 and not result.generator_bound and result.generator_limit == 88.9
    assert result.capacity_rps is not None and result.capacity_rps <= 85.0 and result.confirmed
    assert result.first_fail is not None and (result.first_fail - result.capacity_rps) / result.capacity_rps <= 0.1
    assert result.limiting == "generator"


def test_search_with_generator_limits_keeps_the_service_limit_below_the_generator_limit() -> None:
    step, _ = _service(40.0, generator_limit=85.0)
    result = search(step, SearchSettings(min_rps=10, max_rps=200, precision=0.1, generator_limits=True))
    assert result.capacity_rps is not None and result.capacity_rps <= 40.0 < (result.first_fail or 0)
    assert result.limiting == "p99" and result.generator_limit is None


def test_search_accelerates_past_the_given_rate_and_reaches_a_far_knee_in_few_steps() -> None:
    """A plan from a throughput that read half the truth: one precision at a time up to it, then
    each pass squares the growth, and the bisection narrows the wider bracket."""
    step, tried = _service(78.0)
    settings = SearchSettings(min_rps=10, max_rps=4 * 42.0, precision=0.1, growth=1.0999, accelerate_above=42.0)
    result = search(step, settings, start_rps=40.0)
    assert [round(rate, 1) for rate in tried[:5]] == [40.0, 44.0, 53.2, 77.9, 155.8]
    assert result.capacity_rps is not None and result.capacity_rps <= 78.0 < (result.first_fail or 0)
    assert result.confirmed and len(tried) <= 9
    plain, plain_tried = _service(78.0)
    search(plain, SearchSettings(min_rps=10, max_rps=4 * 42.0, precision=0.1, growth=1.0999), start_rps=40.0)
    assert len(tried) < len(plain_tried)


def test_search_a_start_above_capacity_walks_down_then_bisects() -> None:
    step, tried = _service(30.0)
    result = search(step, SearchSettings(min_rps=5, max_rps=200, precision=0.1), start_rps=50)
    assert tried[:2] == [50, 25]
    assert result.capacity_rps is not None and result.capacity_rps <= 30 < (result.first_fail or 0)


def test_search_steps_are_bounded() -> None:
    step, tried = _service(33.0)
    search(step, SearchSettings(min_rps=1, max_rps=1e6, precision=1e-6, max_steps=12))
    assert len(tried) == 13  # twelve, and the confirmation of the figure found


def test_search_confirms_the_capacity_with_a_second_step() -> None:
    step, tried = _service(47.0)
    result = search(step, SearchSettings(min_rps=10, max_rps=100, precision=0.05))
    assert result.confirmed and tried[-1] == result.capacity_rps and tried.count(result.capacity_rps) == 2


def test_search_a_lucky_pass_that_fails_its_confirmation_is_searched_below() -> None:
    calls: dict[float, int] = {}

    def step(rate: float) -> StepVerdict:  # truly 40; the first step at any rate above it passes by luck once
        calls[rate] = calls.get(rate, 0) + 1
        lucky = 40.0 < rate <= 46.0 and calls[rate] == 1 and sum(calls.values()) < 8
        return StepVerdict(rate, "pass" if rate <= 40.0 or lucky else "fail", None if rate <= 40.0 else "p99")

    result = search(step, SearchSettings(min_rps=10, max_rps=80, precision=0.05))
    assert result.capacity_rps is not None and result.capacity_rps <= 40.0
    assert result.confirmed and result.first_fail is not None and result.first_fail > result.capacity_rps


def test_search_a_pass_above_the_capacity_confirms_it_without_another_step() -> None:
    """Truly 40: the first step above it passes by luck and then fails its confirmation. 40 passed
    before, and that lucky pass is its second look (latency grows with the rate), so 40 is not
    stepped again."""
    calls: dict[float, int] = {}

    def step(rate: float) -> StepVerdict:
        calls[rate] = calls.get(rate, 0) + 1
        lucky = 40.0 < rate <= 46.0 and calls[rate] == 1
        return StepVerdict(rate, "pass" if rate <= 40.0 or lucky else "fail", None if rate <= 40.0 else "p99")

    result = search(step, SearchSettings(min_rps=10, max_rps=80, precision=0.1, growth=1.0989), start_rps=40.0)
    tried = [round(s.rate_rps, 2) for s in result.steps]
    assert tried == [40.0, 43.96, 48.3, 43.96]
    assert result.capacity_rps == 40.0 and result.first_fail == pytest.approx(43.956) and result.confirmed


def test_search_the_only_pass_failing_its_confirmation_walks_down_instead_of_giving_up() -> None:
    calls: dict[float, int] = {}

    def step(rate: float) -> StepVerdict:  # truly 12; the first step at 25 passes by luck, once
        calls[rate] = calls.get(rate, 0) + 1
        lucky = rate == 25.0 and calls[rate] == 1
        return StepVerdict(rate, "pass" if rate <= 12.0 or lucky else "fail", None if rate <= 12.0 else "p99")

    result = search(step, SearchSettings(min_rps=2, max_rps=200, precision=0.1), start_rps=50)
    assert calls[25.0] == 2 and 12.5 in calls  # the lucky pass was confirmed, failed, and the walk went on
    assert result.capacity_rps is not None and 12.0 / 1.1 <= result.capacity_rps <= 12.0
    assert result.confirmed and not result.below_min


def test_search_without_confirmation_takes_no_extra_step() -> None:
    step, tried = _service(47.0)
    result = search(step, SearchSettings(min_rps=10, max_rps=100, precision=0.05, confirm=False))
    assert result.confirmed is None and tried.count(result.capacity_rps) == 1


@pytest.mark.parametrize("fields, text", [
    ({"min_rps": 0, "max_rps": 10}, "0 < min"), ({"min_rps": 20, "max_rps": 10}, "min (20) < max (10)"),
    ({"min_rps": 1, "max_rps": 10, "precision": 1.5}, "precision 1.5"),
])
def test_search_settings_reject_bad_values_naming_them(fields: dict[str, Any], text: str) -> None:
    with pytest.raises(ValueError, match=text.replace("(", r"\(").replace(")", r"\)")):
        SearchSettings(**fields)


def test_search_after_a_known_failure_never_steps_there_and_bisects_below_it() -> None:
    """A re-measure after a cached figure missed its check (70.2 req/s, true capacity 44): the
    check's rate is the first failure from the start, so the first pass already brackets."""
    step, tried = _service(44.0)
    known = StepVerdict(70.2, "fail", "p95-batch", "a 20 s step at 70.2 req/s missed p95-batch")
    result = search(step, SearchSettings(min_rps=18.7, max_rps=70.2, precision=0.10), start_rps=38.0,
                    into=SearchResult.after(known))
    assert max(tried) < 70.2 and tried[0] == 38.0
    assert result.capacity_rps is not None and result.first_fail is not None and result.confirmed
    assert result.capacity_rps <= 44.0 < result.first_fail and result.first_fail < 70.2
    assert result.limiting == "p99" and result.known_fail == known and result.steps[0].rate_rps == 38.0
    # the same search without the check's failure climbs to 70.2 itself before it can bisect
    fresh, fresh_tried = _service(44.0)
    search(fresh, SearchSettings(min_rps=18.7, max_rps=70.2, precision=0.10), start_rps=38.0)
    assert 70.2 in fresh_tried and len(fresh_tried) > len(tried)


def test_search_after_a_known_failure_at_its_start_walks_down_from_below_it() -> None:
    step, tried = _service(20.0)
    known = StepVerdict(30.0, "fail", "p99", "check")
    result = search(step, SearchSettings(min_rps=10, max_rps=30, precision=0.10, growth=1.1), start_rps=40.0,
                    into=SearchResult.after(known))
    assert tried[0] == pytest.approx(30.0 / 1.1) and max(tried) < 30.0
    assert result.capacity_rps is not None and result.first_fail is not None
    assert result.capacity_rps <= 20.0 < result.first_fail < 30.0
    assert result.limiting == "p99" and result.steps[-1].verdict == "pass"  # the search's own failure took over


def test_search_a_known_failure_alone_is_neither_below_the_minimum_nor_a_capacity() -> None:
    result = SearchResult.after(StepVerdict(30.0, "fail", "p99"))
    assert not result.below_min and not result.ceiling and result.capacity_rps is None
    with pytest.raises(ValueError, match="only start from a failure"):
        SearchResult.after(StepVerdict(30.0, "pass"))


def test_search_after_a_known_failure_far_above_climbs_by_its_growth() -> None:
    """The cached figure was twice what the machine carries now (120 req/s; true capacity 62): the
    probed plan starts at 53 and climbs as a first search would (by 10%, squared past the probed
    throughput of 55.8), instead of bisecting towards 120 (79.8, 65, 72, ...)."""
    step, tried = _service(62.0)
    known = StepVerdict(120.0, "fail", "p99-free", "check")
    settings = SearchSettings(min_rps=18.7, max_rps=120.0, precision=0.10, growth=1.0999, accelerate_above=55.8)
    result = search(step, settings, start_rps=53.0, into=SearchResult.after(known))
    assert tried == pytest.approx([53.0, 58.29, 70.52, 64.12, 58.29], rel=1e-3)
    assert result.capacity_rps == pytest.approx(58.29, rel=1e-3) and result.confirmed
    assert result.first_fail == pytest.approx(64.12, rel=1e-3) and result.limiting == "p99"


def test_search_after_a_known_failure_never_steps_at_it_even_when_growing_fast() -> None:
    step, tried = _service(1000.0)  # every rate below the failure passes
    known = StepVerdict(100.0, "fail", "p99", "check")
    settings = SearchSettings(min_rps=10, max_rps=100.0, precision=0.05, growth=1.5, accelerate_above=20.0)
    result = search(step, settings, start_rps=20.0, into=SearchResult.after(known))
    assert max(tried) < 100.0 and result.first_fail == 100.0 and not result.ceiling
    assert result.capacity_rps is not None and (100.0 - result.capacity_rps) / result.capacity_rps <= 0.05


def _open_then(capacity: float, reopen: bool = False, offer: float | None = 120.0):
    """A service whose first step at each rate up to `capacity` ends open (too little evidence),
    offering a retry of `offer` seconds; the retry passes (or, `reopen`, ends open again). Above
    `capacity` every step is missed."""
    tried: list[float] = []

    def step(rate: float) -> StepVerdict:
        again = rate in tried
        tried.append(rate)
        if rate > capacity:
            return StepVerdict(rate, "fail", "p99", "missed")
        if again and not reopen:
            return StepVerdict(rate, "pass")
        return StepVerdict(rate, "fail", "p99", "not shown met", open=True, retry_s=offer)

    return step, tried


def test_search_retry_open_steps_once_more_at_an_open_rate_before_calling_it_a_failure() -> None:
    step, tried = _open_then(47.0)
    result = search(step, SearchSettings(min_rps=10, max_rps=100, precision=0.05, retry_open=True))
    assert result.capacity_rps is not None and 0.95 * 47.0 / 1.05 <= result.capacity_rps <= 47.0
    assert tried[:3] == [10, 10, 20] and tried.count(80) == 1  # a miss is not retried
    assert [s.verdict for s in result.steps[:2]] == ["fail", "pass"] and result.steps[0].open

    plain_step, _ = _open_then(47.0)
    plain = search(plain_step, SearchSettings(min_rps=10, max_rps=100, precision=0.05))
    assert plain.capacity_rps is None and plain.below_min


def test_search_retries_an_open_rate_while_a_retry_is_offered_and_at_most_max_retries_times() -> None:
    step, tried = _open_then(47.0, reopen=True)
    result = search(step, SearchSettings(min_rps=10, max_rps=100, precision=0.05, retry_open=True))
    assert tried == [10] * (1 + MAX_RETRIES) and result.below_min and result.first_fail == 10
    assert [s.open for s in result.steps] == [True] * (1 + MAX_RETRIES)  # every try kept, the last folded in

    unoffered, tried = _open_then(47.0, offer=None)  # the step function offers no retry: a failure at once
    result = search(unoffered, SearchSettings(min_rps=10, max_rps=100, precision=0.05, retry_open=True))
    assert tried == [10] and result.below_min
