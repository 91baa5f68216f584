"""Dollars per 1M tokens against figures worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rushhour.reports.measures.tokencost import token_costs, token_price
from tests.reports.helpers import requests_frame


def _frame() -> pd.DataFrame:
    """Four ok answers: quality served 100 + 300 output tokens (paid), fast 200 + 400 (free)."""
    frame = requests_frame([1.0, 2.0, 3.0, 4.0], [50.0] * 4)
    frame["model"] = ["quality", "quality", "fast", "fast"]
    frame["priority"] = ["paid", "paid", "free", "free"]
    frame["output_tokens"] = [100.0, 300.0, 200.0, 400.0]
    return frame


POOLS = [{"pool": "quality", "usd": 2.0}, {"pool": "fast", "usd": 0.3}]


def test_price_per_million_tokens_and_its_delta_method_interval() -> None:
    from scipy.stats import norm
    price = token_price(2.0, np.array([100.0, 300.0]))
    assert price["usd_per_1m"] == pytest.approx(2.0 / 400 * 1e6)  # 5000 USD per 1M
    spread = np.std([100.0, 300.0], ddof=1) * math.sqrt(2)  # 141.42 * 1.414 = 200 tokens
    z = norm.ppf(0.975)
    assert price["ci"][0] == pytest.approx(2.0 / (400 + z * spread) * 1e6)
    assert price["ci"][1] == pytest.approx(2.0 / (400 - z * spread) * 1e6)  # 400 - 392 tokens: wide
    wild = token_price(2.0, np.array([0.0, 400.0]))  # spread 400 tokens: the low end of T passes zero
    assert wild["usd_per_1m"] == pytest.approx(5000.0) and wild["ci"][1] is None


def test_per_pool_priority_and_phase_against_hand_figures() -> None:
    frame = _frame()
    phases = pd.Series(["warm", "peak", "peak", "peak"])
    output = token_costs(frame, phases, POOLS, (0.0, 10.0))["output"]
    assert output["known"] is True
    assert output["whole"]["tokens"] == 1000
    assert output["whole"]["usd_per_1m"] == pytest.approx(2.3 / 1000 * 1e6)
    by_pool = {row["pool"]: row for row in output["by_pool"]}
    assert by_pool["quality"]["usd_per_1m"] == pytest.approx(2.0 / 400 * 1e6)
    assert by_pool["fast"]["usd_per_1m"] == pytest.approx(0.3 / 600 * 1e6)
    by_priority = {row["class"]: row for row in output["by_priority"]}
    assert by_priority["paid"]["usd_per_1m"] == pytest.approx(5000.0)
    assert by_priority["free"]["usd_per_1m"] == pytest.approx(500.0)
    by_phase = {row["class"]: row for row in output["by_phase"]}
    # warm: 100 quality tokens at 0.005 USD = 0.5 USD; peak: 300 * 0.005 + 600 * 0.0005 = 1.8 USD
    assert by_phase["warm"]["usd"] == pytest.approx(0.5)
    assert by_phase["peak"]["usd"] == pytest.approx(1.8)
    assert by_phase["peak"]["usd_per_1m"] == pytest.approx(1.8 / 900 * 1e6)


def test_failed_answers_and_those_outside_the_window_carry_no_tokens() -> None:
    frame = _frame()
    frame.loc[3, "ok"] = False
    output = token_costs(frame.assign(intended_s=[1.0, 2.0, 3.0, 20.0]), pd.Series([""] * 4), POOLS,
                         (0.0, 10.0))["output"]
    assert output["whole"]["tokens"] == 600


def test_a_pool_that_served_no_token_is_overhead_shared_by_every_token() -> None:
    frame = _frame()
    pools = POOLS + [{"pool": "spare", "usd": 1.0}]
    output = token_costs(frame, pd.Series([""] * 4), pools, (0.0, 10.0))["output"]
    paid = next(row for row in output["by_priority"] if row["class"] == "paid")
    assert paid["usd"] == pytest.approx(2.0 + 1.0 * 400 / 1000)


def test_input_tokens_unknown_when_the_protocol_reports_none_and_priced_when_present() -> None:
    frame = _frame()
    costs = token_costs(frame, pd.Series([""] * 4), POOLS, (0.0, 10.0))
    assert costs["input"]["known"] is False and "input_tokens" in costs["input"]["reason"]
    frame["input_tokens"] = [1000.0, 1000.0, 2000.0, 2000.0]
    costs = token_costs(frame, pd.Series([""] * 4), POOLS, (0.0, 10.0))
    assert costs["input"]["whole"]["usd_per_1m"] == pytest.approx(2.3 / 6000 * 1e6)


def test_output_tokens_unknown_when_every_answer_has_none() -> None:
    frame = _frame()
    frame["output_tokens"] = -1.0
    assert token_costs(frame, pd.Series([""] * 4), POOLS, (0.0, 10.0))["output"]["known"] is False


def test_a_class_interval_is_its_pools_weighted_by_its_tokens() -> None:
    frame = _frame()
    frame["priority"] = ["paid", "free", "paid", "free"]  # each class: one quality answer, one fast
    output = token_costs(frame, pd.Series([""] * 4), POOLS, (0.0, 10.0))["output"]
    pools = {row["pool"]: row for row in output["by_pool"]}
    paid = next(row for row in output["by_priority"] if row["class"] == "paid")  # 100 quality + 200 fast
    for side in (0, 1):
        expected = (100 * pools["quality"]["ci"][side] + 200 * pools["fast"]["ci"][side]) / 300
        assert paid["ci"][side] == pytest.approx(expected)
    assert paid["usd_per_1m"] == pytest.approx((100 * 5000.0 + 200 * 500.0) / 300)
    assert paid["method"].startswith("the pools' intervals") and paid["effective_answers"] is None


def test_a_single_pool_class_has_exactly_its_pools_interval() -> None:
    frame = _frame()
    output = token_costs(frame, pd.Series([""] * 4), POOLS, (0.0, 10.0))["output"]
    quality = next(row for row in output["by_pool"] if row["pool"] == "quality")
    paid = next(row for row in output["by_priority"] if row["class"] == "paid")  # quality only
    assert paid["ci"] == pytest.approx(quality["ci"]) and paid["usd_per_1m"] == pytest.approx(quality["usd_per_1m"])


def test_token_price_interval_widens_when_long_answers_come_in_bursts() -> None:
    rng = np.random.default_rng(3)
    alone = rng.lognormal(5.0, 0.8, 6000)
    bursty = np.concatenate([np.sort(chunk) for chunk in np.split(alone, 60)])  # alike neighbours
    plain, grouped = token_price(1.0, alone), token_price(1.0, bursty)
    assert plain["tokens"] == grouped["tokens"]
    assert plain["effective_answers"] == pytest.approx(6000, rel=0.35)
    assert grouped["effective_answers"] < plain["effective_answers"] / 3
    width = [price["ci"][1] - price["ci"][0] for price in (plain, grouped)]
    assert width[1] > 1.7 * width[0]
    assert "batch means" in grouped["method"]


@pytest.mark.parametrize("rho", [0.0, 0.9])
def test_pool_price_interval_covers_the_true_price_when_answers_are_alike_in_time(rho: float) -> None:
    # Log tokens an AR(1) over 3,000 answers: the 95% interval must cover dollars over the
    # expected tokens at least as often as stated, within Monte Carlo error.
    from benchmarks.aux_truth import bounds, token_coverage

    found = token_coverage(rho, 300, seed=int(10 * rho) + 7)
    assert bounds(found["hits"], found["reps"])[1] >= 0.95, found
