"""How long a fresh step warms up: long enough for its queue, started empty, to near its steady state (pure).

A step starts its load on a drained service, so its queue starts empty. Near the knee an empty
queue takes long to fill to its steady state, and a window that opens before then sees a queue
kinder than the one the rate really gives: fewer late answers, a figure that can land above the
truth. How long it takes is the queue's *relaxation time*. For one server with Poisson arrivals
and exponential service (M/M/1) it is 1 / (mu (1 - sqrt(rho))^2), with mu the service rate and
rho the load (Morse's classical result). In heavy traffic a queue of c servers behaves like one
server completing the whole throughput X = c mu (its queue length then follows a reflected
Brownian motion whose relaxation time, 2 sigma^2 / theta^2 with drift theta = X (1 - rho) and
variance sigma^2 = X (rho + cs^2) per second, is the same formula's limit for service as variable
as exponential, cs^2 = 1), so `relaxation_s` takes the saturated throughput the closed-loop probe
measured for X. Taking service as variable as exponential is the cautious side for a model's
nearly fixed batch times, whose queue relaxes in about half that time (cs^2 = 0).

`RELAXATIONS` relaxation times is the warm-up, for this reason. Started at 0, that Brownian
queue stands above its stationary P99 level at time t with its stationary 1% times the chance
that a Brownian motion drifting *up* as fast has passed the level by t: an inverse-Gaussian
passage time of mean ln(100) / 2 and shape its square, in units of sigma^2 / theta^2. That
chance is 95% after 5.3 units, 2.6 relaxation times (a P95's after 1.9, a P99.9's after 3.5).
So 2.5 relaxation times of the cautious formula bring a P99's tail to about 95% of its steady
value for exponential service, and nearer for fixed service times.

Past the throughput (rho >= 1) a queue has no steady state and near it the time grows without
bound, so the warm-up is capped (`warmup_s`): at most the step's own window and at most
`LONGEST_WARMUP_S`. It is never shorter than the fixed warm-up a step has without a probe.
"""

from __future__ import annotations

import math

__all__ = ["LONGEST_WARMUP_S", "RELAXATIONS", "fixed_warmup_s", "relaxation_s", "warmup_s"]

RELAXATIONS = 2.5
"""Relaxation times of warm-up (module doc: a P99's tail at about 95% of its steady value)."""
LONGEST_WARMUP_S = 30.0
"""The longest warm-up, whatever the load: past it a step costs more than its window tells."""


def relaxation_s(load: float, throughput_rps: float) -> float:
    """The relaxation time in seconds of a queue completing `throughput_rps` at most, at `load`
    (arrival rate over that throughput): 1 / (X (1 - sqrt(rho))^2), infinite at or past rho = 1."""
    if throughput_rps <= 0 or not math.isfinite(throughput_rps):
        raise ValueError(f"The throughput {throughput_rps!r} req/s is not a positive number of requests per second.")
    if load >= 1.0:
        return math.inf
    return 1.0 / (throughput_rps * (1.0 - math.sqrt(max(load, 0.0))) ** 2)


def fixed_warmup_s(measure_s: float) -> float:
    """A step's warm-up when nothing is known of its queue: a sixth of its window, 1 to 5 s."""
    return min(5.0, max(1.0, measure_s / 6.0))


def warmup_s(rate_rps: float, throughput_rps: float, window_s: float) -> float:
    """A fresh step's warm-up at `rate_rps` on a service of `throughput_rps`, its window `window_s`
    long: RELAXATIONS relaxation times at its load, at most the window and LONGEST_WARMUP_S,
    never under `fixed_warmup_s`."""
    scaled = RELAXATIONS * relaxation_s(rate_rps / throughput_rps, throughput_rps)
    return max(fixed_warmup_s(window_s), min(scaled, window_s, LONGEST_WARMUP_S))
