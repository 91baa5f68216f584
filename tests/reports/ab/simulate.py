"""Simulated A/B runs with a known truth, for the statistics tests.

The machine's noise is shared by whatever runs at the time: a slow AR(1) wander of every latency
(log scale), bursts that slow one trial two- to fourfold (a neighbour taking the cores), and an
optional drift or periodic load. Each request's own latency is log-normal around 200 ms; the
candidate's is multiplied by `effect`.
Each arm fails its own share of requests at once. The arms alternate as the real design lays them out.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from rushhour.scenarios.ab.trials import TrialDesign

Noise = Callable[[np.ndarray], np.ndarray]
"""Extra log-scale noise per trial, given the trials' mid times in [0, 1)."""


def machine_noise(rng: np.random.Generator, trials: int, *, wander: float = 0.3, burst_share: float = 0.15) -> np.ndarray:
    """Log-scale slowdown of each trial: AR(1) wander plus occasional bursts."""
    z = np.zeros(trials)
    steps = rng.normal(0.0, wander, trials)
    for k in range(1, trials):
        z[k] = 0.6 * z[k - 1] + steps[k]
    bursts = (rng.random(trials) < burst_share) * np.log(rng.uniform(2.0, 4.0, trials))
    return z + bursts


def simulate(effect: float, *, pairs: int, per_trial: int, seed: int, fail_share: float = 0.0,
             extra: Noise | None = None, base_fail_share: float = 0.0, interleave: str = "trials") -> pd.DataFrame:
    """A requests table of one simulated A/B run (the columns the A/B judgement reads)."""
    rng = np.random.default_rng(seed)
    design = TrialDesign.build(float(pairs * 2), pairs * 2, seed, interleave)
    noise = machine_noise(rng, design.trials)
    if extra is not None:
        noise = noise + extra((np.arange(design.trials) + 0.5) / design.trials)
    trial = np.repeat(np.arange(design.trials), per_trial)
    arm = np.asarray(design.arms, dtype=object)[trial]
    shared = trial // 2 * 2 if interleave == "requests" else trial  # one slice's two arms meet one moment
    latency = rng.lognormal(np.log(200.0), 0.5, trial.size) * np.exp(noise[shared])
    latency = np.where(arm == "candidate", latency * effect, latency)
    share = np.where(arm == "candidate", fail_share, base_fail_share)
    ok = rng.random(trial.size) >= share
    latency = np.where(ok, latency, 1.0)  # a failure answers at once: its raw latency flatters it
    intended = trial + rng.random(trial.size) * 0.9
    return pd.DataFrame({"intended_s": intended, "sent_s": intended, "done_s": intended + latency / 1000.0,
                         "latency_ms": latency, "service_ms": latency, "status": np.where(ok, 200, 503),
                         "ok": ok, "priority": "paid", "kind": "short", "mode": "auto",
                         "arm": arm, "trial": trial.astype("int64")})


PROCESSES = ("quiet", "bursts", "server state")
"""The machines a simulated night runs on: `quiet` a mild shared wander; `bursts` that wander
stronger with bursts slowing 15% of slices two- to fourfold (both arms alike, as a neighbour taking
the cores does); `server state` the bursts plus a slow state of each server of its own (x1.1 to
x1.3) that lasts several slices (a GC cycle, a bad CPU placement), which the other arm does not share."""


def server_states(rng: np.random.Generator, slices: int, *, share: float = 0.1, stay: float = 0.8) -> np.ndarray:
    """Log-scale slowdown of one server per slice: a two-state chain that enters a slow state
    (x1.1 to x1.3) with probability share*(1-stay)/(1-share) and stays in it with probability `stay`
    (five slices on average, a tenth of the night in all)."""
    enter = share * (1.0 - stay) / (1.0 - share)
    slow = np.zeros(slices, bool)
    for k in range(1, slices):
        slow[k] = rng.random() < (stay if slow[k - 1] else enter)
    return slow * np.log(rng.uniform(1.1, 1.3, slices))


TEXT_SIGMA = 0.4
"""Log-scale spread of the part of a request's latency its text sets (the nightly's text lengths:
median 90 characters, sigma 0.4); the rest, the request's own, has sigma 0.3 (0.5 in all)."""


def night(effect: float, *, process: str, seed: int, slices: int = 48, slice_s: float = 5.0,
          rate_per_arm: float = 16.0, fail_share: float = 0.0, paid_share: float = 0.4,
          same_texts: bool = True) -> pd.DataFrame:
    """A requests table shaped like a night of the nightly scenario, `rate_per_arm` a second per arm
    over `slices` slices, paid and free, on machine `process`: with `same_texts` the requests
    alternate baseline, candidate, each candidate request with the baseline's text before it;
    otherwise each request goes to a random arm with a text of its own."""
    if process not in PROCESSES:
        raise ValueError(f"process {process!r} is not one of {', '.join(PROCESSES)}.")
    rng = np.random.default_rng([seed, 0x516])
    shared = (machine_noise(rng, slices, wander=0.1, burst_share=0.0) if process == "quiet"
              else machine_noise(rng, slices))
    own = np.zeros((2, slices)) if process != "server state" else np.stack([server_states(rng, slices)
                                                                           for _ in range(2)])
    counts = rng.poisson(2.0 * rate_per_arm * slice_s, slices)
    pair = np.repeat(np.arange(slices), counts)
    text = rng.normal(0.0, TEXT_SIGMA, pair.size)
    if same_texts:
        candidate = np.arange(pair.size) % 2 == 1
        text[candidate] = text[np.flatnonzero(candidate) - 1]
    else:
        candidate = rng.random(pair.size) < 0.5
    latency = (200.0 * np.exp(text + rng.normal(0.0, 0.3, pair.size))
               * np.exp(shared[pair] + own[candidate.astype(int), pair]))
    latency = np.where(candidate, latency * effect, latency)
    ok = rng.random(pair.size) >= fail_share
    latency = np.where(ok, latency, 1.0)
    intended = pair * slice_s + rng.random(pair.size) * slice_s
    return pd.DataFrame({"intended_s": intended, "sent_s": intended, "done_s": intended + latency / 1000.0,
                         "latency_ms": latency, "service_ms": latency, "status": np.where(ok, 200, 503),
                         "ok": ok, "priority": _priorities(rng, pair.size, paid_share, same_texts),
                         "kind": "short", "mode": "auto", "arm": np.where(candidate, "candidate", "baseline"),
                         "trial": (2 * pair + candidate).astype("int64")})


def _priorities(rng: np.random.Generator, n: int, paid_share: float, same_texts: bool) -> np.ndarray:
    """Each request's priority; a candidate request that copies a text copies its priority too."""
    paid = rng.random(n) < paid_share
    if same_texts:
        paid[1::2] = paid[0:-1:2][: paid[1::2].size]
    return np.where(paid, "paid", "free")
