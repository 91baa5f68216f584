"""The sequential step design against simulated steps of known truth: both wrong calls at most 5%.

The simulation (benchmarks/sequential_sim.py) judges 600-request steps against a P99 objective at
the planned looks, as `rushhour.reports.capacity.stepstats` judges a live step, with independent, AR(1) and M/D/1
latencies at bad shares on both sides of the allowed 1%: 9 shares x 800 steps x 3 laws.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.sequential_sim import ALLOWED, TRUTHS, wrong_calls
from rushhour.reports.estimate.sequential import LOOKS, design_effect, look_fractions, nominal_levels, paired_error

STEPS = 800


@pytest.mark.parametrize("law, seed", [("independent", 11), ("ar1", 12), ("md1", 13)])
@pytest.mark.slow
def test_sequential_wrong_calls_stay_within_five_percent(law: str, seed: int) -> None:
    rates = wrong_calls(law, seed, STEPS)
    truly_met = [p for p in TRUTHS if p <= ALLOWED]
    truly_missed = [p for p in TRUTHS if p > ALLOWED]
    false_missed = np.mean([rates[p]["missed"] for p in truly_met])
    false_met = np.mean([rates[p]["met"] for p in truly_missed])
    assert false_missed <= 0.05 and false_met <= 0.05, rates
    # at every single truth too, with room for the simulation's own noise (800 steps: sd < 0.8%)
    assert max(rates[p]["missed"] for p in truly_met) <= 0.05 + 0.015, rates
    assert max(rates[p]["met"] for p in truly_missed) <= 0.05 + 0.015, rates
    # and the design still decides: clear truths are often called right (a queue at 80% load
    # remembers so much that its 600 requests are worth far fewer independent ones)
    assert rates[0.001]["met"] > 0.3 and rates[0.025]["missed"] > 0.1, rates


@pytest.mark.parametrize("law, seed", [("independent", 21), ("ar1", 22), ("md1", 23)])
@pytest.mark.slow
def test_sequential_a_calibrations_two_windows_are_wrongly_met_together_at_most_five_percent(law: str, seed: int) -> None:
    """A calibration's figure rests on two windows, back to back from one series (a queue carries
    its state across), each spending sqrt(5%) on "met": both called met where the truth is missed
    at most 5% of the time; one window alone at most its own 22.4%; "missed" still at most 5%."""
    rates = wrong_calls(law, seed, STEPS, paired=True)
    truly_met = [p for p in TRUTHS if p <= ALLOWED]
    truly_missed = [p for p in TRUTHS if p > ALLOWED]
    assert max(rates[p]["met"] for p in truly_missed) <= 0.05, rates
    assert max(rates[p]["one_window_met"] for p in truly_missed) <= paired_error(), rates
    assert max(rates[p]["missed"] for p in truly_met) <= 0.05 + 0.015, rates
    # and the pair still decides: a clearly met truth is often called met in both windows
    assert rates[0.001]["met"] > 0.3, rates


def test_sequential_spending_adds_up_to_the_stated_error() -> None:
    from scipy.stats import norm
    levels = nominal_levels()
    assert len(levels) == LOOKS and np.all(np.diff(levels) > 0)
    rng = np.random.default_rng(5)
    # Brownian motion at the looks: the chance of ever crossing is the spent 5%
    increments = rng.standard_normal((200_000, LOOKS)) * np.sqrt(np.diff(look_fractions(), prepend=0.0))
    z = np.cumsum(increments, axis=1) / np.sqrt(look_fractions())
    crossed = (z > norm.ppf(1.0 - levels)).any(axis=1).mean()
    assert crossed == pytest.approx(0.05, abs=0.003)


def test_sequential_design_effect_sees_clusters_and_not_independence() -> None:
    rng = np.random.default_rng(7)
    scattered = rng.random((400, 600)) < 0.05
    clustered = np.repeat(rng.random((400, 30)) < 0.05, 20, axis=1)
    assert np.median(design_effect(scattered)) == pytest.approx(1.0, abs=0.2)
    assert np.median(design_effect(clustered)) > 8.0
