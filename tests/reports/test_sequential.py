"""The sequential step design against simulated steps of known truth: both wrong calls at most 5%.

Each simulated step is 600 requests (20 req/s for a 30 s window) judged against a P99 objective at
the design's planned looks, exactly as `reports.stepstats` judges a live step (the pilot indicator
floored at half the threshold). Latencies come from three laws: independent log-normal draws, a
log-normal AR(1) series (neighbours correlated), and an M/D/1 queue at 80% load (Lindley's
recursion, stationary), each at bad shares on both sides of the allowed 1%.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from reports.sequential import LOOKS, PILOT_FLOOR, design_effect, look_call, look_fractions, nominal_levels

N = 600
ALLOWED = 0.01
STEPS = 800  # per truth and law: 9 truths x 3 laws = 21,600 steps
TRUTHS = (0.001, 0.004, 0.007, 0.009, 0.01, 0.0115, 0.013, 0.016, 0.025)


def _sequential(latency: np.ndarray, threshold: float) -> np.ndarray:
    """Every step's call ("met", "missed" or "open") over the planned looks, first call wins."""
    calls = np.full(latency.shape[0], "open", dtype=object)
    for look, share in enumerate(look_fractions(), start=1):
        seen = latency[:, : round(share * N)]
        bad = seen > threshold
        call = look_call(bad, np.zeros_like(bad), ALLOWED, look=look, score=seen, floor=PILOT_FLOOR * threshold)
        undecided = calls == "open"
        calls[undecided & call.met] = "met"
        calls[undecided & call.missed] = "missed"
    return calls


def _independent(rng: np.random.Generator) -> np.ndarray:
    return np.exp(rng.standard_normal((STEPS, N)))


def _ar1(rng: np.random.Generator, rho: float = 0.6) -> np.ndarray:
    z = np.empty((STEPS, N))
    z[:, 0] = rng.standard_normal(STEPS)
    noise = rng.standard_normal((STEPS, N)) * np.sqrt(1.0 - rho**2)
    for i in range(1, N):
        z[:, i] = rho * z[:, i - 1] + noise[:, i]
    return np.exp(z)


def _md1(rng: np.random.Generator, steps: int, load: float = 0.8, burn: int = 400) -> np.ndarray:
    """Sojourn times of an M/D/1 queue (service 1, utilisation `load`), `steps` stationary runs."""
    gaps = rng.exponential(1.0 / load, (steps, burn + N))
    wait = np.zeros(steps)
    out = np.empty((steps, N))
    for i in range(burn + N):
        if i >= burn:
            out[:, i - burn] = wait + 1.0
        wait = np.maximum(0.0, wait + 1.0 - gaps[:, i])
    return out


def _wrong_calls(law: str, seed: int) -> dict[float, dict[str, float]]:
    rng = np.random.default_rng(seed)
    out = {}
    if law == "md1":
        truth_sample = _md1(np.random.default_rng(seed + 1), 4000).ravel()  # the law's own quantiles
    for p in TRUTHS:
        if law == "md1":
            latency, threshold = _md1(rng, STEPS), float(np.quantile(truth_sample, 1.0 - p))
        else:
            latency = _independent(rng) if law == "independent" else _ar1(rng)
            threshold = float(np.exp(norm.ppf(1.0 - p)))
        calls = _sequential(latency, threshold)
        out[p] = {"met": float(np.mean(calls == "met")), "missed": float(np.mean(calls == "missed"))}
    return out


@pytest.mark.parametrize("law, seed", [("independent", 11), ("ar1", 12), ("md1", 13)])
def test_sequential_wrong_calls_stay_within_five_percent(law: str, seed: int) -> None:
    rates = _wrong_calls(law, seed)
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


def test_sequential_spending_adds_up_to_the_stated_error() -> None:
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
    scattered = rng.random((400, N)) < 0.05
    clustered = np.repeat(rng.random((400, N // 20)) < 0.05, 20, axis=1)
    assert np.median(design_effect(scattered)) == pytest.approx(1.0, abs=0.2)
    assert np.median(design_effect(clustered)) > 8.0
