"""The anchor comparison: a machine 10% slower at the end is flagged, a steady one is not."""

from __future__ import annotations

import numpy as np
import pytest

from rushhour.reports.estimate.anchor import MachineDrift, family_confidence, machine_drift


def _window(rng: np.random.Generator, speed: float, n: int = 600, rho: float = 0.9) -> np.ndarray:
    """Latencies of a light load whose per-request noise is AR(1) in the log (sd 0.05), times `speed`."""
    noise = np.empty(n)
    level = 0.0
    for k in range(n):
        level = rho * level + rng.standard_normal() * 0.05 * np.sqrt(1 - rho**2)
        noise[k] = level
    return 20.0 * speed * np.exp(noise)


def test_a_machine_ten_percent_slower_at_the_end_is_flagged() -> None:
    flagged = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        drift = machine_drift(40.0, _window(rng, 1.0), _window(rng, 1.1))
        assert drift is not None
        flagged += drift.changed
        assert drift.low <= drift.ratio <= drift.high
    assert flagged >= 38
    assert drift is not None
    assert "% slower at the end" in drift.sentence() and "not a steady one" in drift.sentence()


def test_a_steady_machine_is_flagged_at_most_rarely() -> None:
    flags = [machine_drift(40.0, _window(rng, 1.0), _window(rng, 1.0)).changed  # type: ignore[union-attr]
             for rng in (np.random.default_rng([7, k]) for k in range(200))]
    assert sum(flags) <= 8  # nominal 1% of 200 is 2; a test ignoring the dependence flags far more


def test_an_iid_test_would_flag_the_steady_machine_often() -> None:
    """The same steady windows compared as if independent: the dependence is what keeps the flags rare."""
    rng = np.random.default_rng(3)
    wrong = 0
    for _ in range(100):
        a, b = np.log(_window(rng, 1.0)), np.log(_window(rng, 1.0))
        se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
        wrong += abs(b.mean() - a.mean()) > 1.96 * se
    assert wrong > 20


def test_identical_answers_hold_and_thin_windows_are_not_compared() -> None:
    steady = machine_drift(40.0, np.full(300, 20.0), np.full(300, 20.0))
    assert steady is not None and not steady.changed and steady.ratio == pytest.approx(1.0)
    assert "alike" in steady.sentence()
    assert machine_drift(40.0, np.full(5, 20.0), np.full(300, 20.0)) is None
    assert machine_drift(40.0, np.full(300, 20.0), np.full(300, 22.0)).changed  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="tolerance -0.1"):
        machine_drift(40.0, np.full(300, 20.0), np.full(300, 20.0), tolerance=-0.1)


def test_a_family_level_is_printed_as_it_is_not_rounded_up_to_100_percent() -> None:
    level = family_confidence(12)  # a search's short windows and its end, together
    held = MachineDrift(20.0, 1.004, 0.951, 1.059, level, (90.0, 90.0), 0.0)
    assert "99.9% interval 0.951-1.059" in held.sentence()
    assert "99% interval" in MachineDrift(20.0, 1.2, 1.12, 1.24, 0.99, (90.0, 90.0), 0.0).sentence()
