"""The share test on blocks of time: its p-value, design effect and refusal of empty runs."""

from __future__ import annotations

import numpy as np
import pytest

from rushhour.reports.estimate.blockshare import share_increase


def test_independent_failures_are_tested_on_their_counts() -> None:
    rng = np.random.default_rng(1)
    test = share_increase(rng.random(5_000) < 0.03, [rng.random(5_000) < 0.01])
    assert test.design_effect < 2.0 and test.p_value < 1e-6 and test.runs_p_value is None


def test_bursts_shrink_the_counts_the_test_sees() -> None:
    cur = np.zeros(5_000, dtype=bool)
    cur[1_000:1_100] = True  # one outage of 100 requests
    base = np.zeros(5_000, dtype=bool)
    base[::500] = True
    test = share_increase(cur, [base])
    assert test.design_effect > 10 and test.effective_current < 500 and test.p_value > 0.025


def test_an_empty_run_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="at least one request"):
        share_increase(np.zeros(0, dtype=bool), [np.ones(10, dtype=bool)])
