"""Hostile processes of known truth for the statistics core: each breaks independence on purpose.

Every process returns a replications x requests array in time order (latencies in units of one
service time, or 0/1 failure flags), vectorised over replications:

- `md1`: an M/D/1 FIFO queue, started empty or in its stationary state (a long burn-in dropped);
  Lindley's recursion W(n) = max(0, W(n-1) + S(n-1) - A(n)) solved as a running minimum.
- `mdc`: an M/D/c FIFO queue. With one fixed service time customers leave in arrival order, so
  customer n starts at max(arrival n, start of customer n - c + D): c interleaved Lindley
  recursions over arrival gaps c apart.
- `wandering`: M/D/1 whose machine speed wanders, service x exp(s) with s a stationary AR(1) of
  standard deviation 5-10% and a correlation time of thousands of requests.
- `cold_cache`: M/D/1 started empty whose first requests miss a cold cache (service up to 3x,
  decaying over the first few hundred requests).
- `bursts`: failures in bursts, on while a slow stationary Gaussian AR(1) is above a threshold;
  the true failed share is set to `BURST_SHARE` exactly.
- `independent`: exponential latencies, the control where the classic intervals are exact.
"""

from __future__ import annotations

import numpy as np
from scipy import special
from scipy.signal import lfilter

BURST_SHARE = 0.0102
"""The true failed share of `bursts`: just above a 1% allowance."""
BURST_ON_FAIL = 0.1
BURST_OFF_FAIL = 0.002


def _stationary_ar1(rng: np.random.Generator, shape: tuple[int, int], steps: float) -> np.ndarray:
    """Unit-variance Gaussian AR(1) rows started in their stationary law; correlation time
    `steps` requests."""
    phi = float(np.exp(-1.0 / steps))
    noise = rng.standard_normal(shape)
    noise[:, 0] /= np.sqrt(1.0 - phi**2)
    return np.asarray(lfilter([np.sqrt(1.0 - phi**2)], [1.0, -phi], noise, axis=1))


def lindley(service: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """Sojourn times (wait + service) of a FIFO single server started empty; rows are
    replications, gaps[:, n] the time from arrival n - 1 to arrival n (gaps[:, 0] unused)."""
    steps = np.cumsum(service[:, :-1] - gaps[:, 1:], axis=1)
    wait = np.zeros_like(service)
    wait[:, 1:] = steps - np.minimum(np.minimum.accumulate(steps, axis=1), 0.0)
    return wait + service


def burn_in(load: float) -> int:
    """Requests dropped to start a queue in its stationary state: many relaxation times,
    which grow as 1 / (1 - load)^2 near the knee."""
    return int(min(200_000, 40.0 / (1.0 - load) ** 2 + 2_000))


def md1(rng: np.random.Generator, reps: int, n: int, load: float, *, stationary: bool) -> np.ndarray:
    """M/D/1 sojourn times (service time 1) at `load`."""
    burn = burn_in(load) if stationary else 0
    gaps = rng.exponential(1.0 / load, size=(reps, n + burn))
    return lindley(np.ones_like(gaps), gaps)[:, burn:]


def mdc(rng: np.random.Generator, reps: int, n: int, load: float, servers: int, *,
        stationary: bool) -> np.ndarray:
    """M/D/c sojourn times (service time 1, `servers` servers) at `load` per server."""
    burn = burn_in(load) if stationary else 0
    total = -(-(n + burn) // servers) * servers
    arrivals = np.cumsum(rng.exponential(1.0 / (load * servers), size=(reps, total)), axis=1)
    lanes = arrivals.reshape(reps, total // servers, servers).transpose(0, 2, 1).reshape(-1, total // servers)
    gaps = np.diff(lanes, axis=1, prepend=0.0)
    sojourn = lindley(np.ones_like(gaps), gaps)
    ordered = sojourn.reshape(reps, servers, total // servers).transpose(0, 2, 1).reshape(reps, total)
    return ordered[:, burn:burn + n]


def wandering(rng: np.random.Generator, reps: int, n: int, load: float, sigma: float,
              steps: float = 2_000.0) -> np.ndarray:
    """M/D/1 in its stationary state with service exp(s), s AR(1) of sd `sigma`."""
    burn = burn_in(load) + int(5 * steps)
    speed = np.exp(sigma * _stationary_ar1(rng, (reps, n + burn), steps))
    gaps = rng.exponential(1.0 / load, size=(reps, n + burn))
    return lindley(speed, gaps)[:, burn:]


def cold_cache(rng: np.random.Generator, reps: int, n: int, load: float,
               misses: float = 300.0) -> np.ndarray:
    """M/D/1 started empty; request k's service is 1 + 2 exp(-k / misses)."""
    service = np.broadcast_to(1.0 + 2.0 * np.exp(-np.arange(n) / misses), (reps, n)).copy()
    gaps = rng.exponential(1.0 / load, size=(reps, n))
    return lindley(service, gaps)


def bursts(rng: np.random.Generator, reps: int, n: int, steps: float = 50.0) -> np.ndarray:
    """0/1 failure flags whose true share is `BURST_SHARE`: on-state failures at 10%, off-state
    at 0.2%, the on state while a stationary AR(1) of correlation time `steps` exceeds a level."""
    on_share = (BURST_SHARE - BURST_OFF_FAIL) / (BURST_ON_FAIL - BURST_OFF_FAIL)
    level = float(-special.ndtri(on_share))
    on = _stationary_ar1(rng, (reps, n), steps) > level
    chance = np.where(on, BURST_ON_FAIL, BURST_OFF_FAIL)
    return (rng.random((reps, n)) < chance).astype(float)


def independent(rng: np.random.Generator, reps: int, n: int) -> np.ndarray:
    """Exponential latencies, independent: the control."""
    return rng.exponential(1.0, size=(reps, n))


PEAK_EDGES = (0.25, 0.45, 0.55, 0.75)
"""Where `md1_peak`'s load changes, as shares of the run: rising, the peak, falling, calm."""


def md1_peak(rng: np.random.Generator, reps: int, n: int, low: float = 0.5,
             high: float = 0.9) -> np.ndarray:
    """M/D/1 whose load rises from `low` to `high` over a quarter of the run's requests, holds
    the peak for a fifth, falls back over a fifth and stays calm to the end (a promo day). The
    queue starts in the calm state's stationary law; the load follows the request count."""
    burn = burn_in(low)
    share = np.arange(n) / n
    a, b, c, d = PEAK_EDGES
    load = np.interp(share, [0.0, a, b, c, d, 1.0], [low, high, high, high, low, low])
    rates = np.concatenate((np.full(burn, low), load))
    gaps = rng.exponential(1.0, size=(reps, n + burn)) / rates
    return lindley(np.ones_like(gaps), gaps)[:, burn:]


def peak_labels(n: int) -> np.ndarray:
    """The stretch of each of `md1_peak`'s requests (the run knows its phases)."""
    return np.searchsorted(np.array(PEAK_EDGES) * n, np.arange(n), side="right")


FAULT_EDGES = (0.4, 0.6)
"""Where `fault_window`'s slow service starts and ends, as shares of the run."""


def fault_window(rng: np.random.Generator, reps: int, n: int, load: float = 0.6,
                 slow: float = 1.5) -> np.ndarray:
    """M/D/1 at `load` in its stationary state whose service is `slow` times longer between
    `FAULT_EDGES` (a degraded node: load `load x slow` inside the window)."""
    burn = burn_in(load)
    start, end = (burn + int(edge * n) for edge in FAULT_EDGES)
    service = np.ones((reps, n + burn))
    service[:, start:end] = slow
    gaps = rng.exponential(1.0 / load, size=(reps, n + burn))
    return lindley(service, gaps)[:, burn:]


def fault_labels(n: int) -> np.ndarray:
    """Inside or outside `fault_window`'s window, per request (the run knows its faults)."""
    return np.searchsorted(np.array(FAULT_EDGES) * n, np.arange(n), side="right")
