"""Benchmark: the capacity step's wrong calls over thousands of simulated steps of known truth.

Each simulated step is 600 requests (20 req/s for a 30 s window) judged against a P99 objective
at the planned looks of `rushhour.reports.estimate.sequential`, the way `rushhour.reports.capacity.stepstats` judges a live step (the
pilot indicator floored at half the threshold). Latencies come from three laws: independent
log-normal draws, a log-normal AR(1) series (neighbours correlated, rho 0.6), and an M/D/1 queue
at 80% load (Lindley's recursion, started in its stationary state), each at bad shares on both
sides of the allowed 1%. A wrong "missed" is a call of missed where the truth is at most 1%, a
wrong "met" one of met where it is above. Vectorised: the whole table takes seconds.

`--paired` simulates what a calibration's figure rests on instead: two windows of 600 requests
taken back to back from one series (the second starts where the first ends, so a queue carries
its state across), each judged with "met" spending `rushhour.reports.estimate.sequential.paired_error()`: "called met" is both windows
called met (a wrong one where the truth is above 1%), "called missed" the first window called
missed, as each window may be; the JSON adds one window's "met" (`one_window_met`) and either
window's "missed" (`either_missed`, what a confirmation costs at any level).

Usage: python -m benchmarks.sequential_sim [--steps 800] [--paired] [--out docs/data/sequential-errors.json]
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
from scipy.special import ndtri

from rushhour.reports.estimate.sequential import ALPHA, PILOT_FLOOR, look_call, look_fractions, paired_error

N = 600
ALLOWED = 0.01
TRUTHS = (0.001, 0.004, 0.007, 0.009, 0.01, 0.0115, 0.013, 0.016, 0.025)
LAWS = {"independent": 11, "ar1": 12, "md1": 13}


def sequential_calls(latency: np.ndarray, threshold: float, met_error: float = ALPHA) -> np.ndarray:
    """Every step's call ("met", "missed" or "open") over the planned looks, first call wins."""
    n = latency.shape[1]
    calls = np.full(latency.shape[0], "open", dtype=object)
    for look, share in enumerate(look_fractions(), start=1):
        seen = latency[:, : round(share * n)]
        bad = seen > threshold
        call = look_call(bad, np.zeros_like(bad), ALLOWED, look=look, score=seen, floor=PILOT_FLOOR * threshold,
                         met_error=met_error)
        undecided = calls == "open"
        calls[undecided & call.met] = "met"
        calls[undecided & call.missed] = "missed"
    return calls


def independent(rng: np.random.Generator, steps: int, n: int = N) -> np.ndarray:
    return np.exp(rng.standard_normal((steps, n)))


def ar1(rng: np.random.Generator, steps: int, n: int = N, rho: float = 0.6) -> np.ndarray:
    z = np.empty((steps, n))
    z[:, 0] = rng.standard_normal(steps)
    noise = rng.standard_normal((steps, n)) * np.sqrt(1.0 - rho**2)
    for i in range(1, n):
        z[:, i] = rho * z[:, i - 1] + noise[:, i]
    return np.exp(z)


def md1(rng: np.random.Generator, steps: int, n: int = N, load: float = 0.8, burn: int = 400) -> np.ndarray:
    """Sojourn times of an M/D/1 queue (service 1, utilisation `load`), `steps` stationary runs."""
    gaps = rng.exponential(1.0 / load, (steps, burn + n))
    wait = np.zeros(steps)
    out = np.empty((steps, n))
    for i in range(burn + n):
        if i >= burn:
            out[:, i - burn] = wait + 1.0
        wait = np.maximum(0.0, wait + 1.0 - gaps[:, i])
    return out


def _series(law: str, rng: np.random.Generator, steps: int, n: int) -> np.ndarray:
    return {"independent": independent, "ar1": ar1, "md1": md1}[law](rng, steps, n)


def _threshold(law: str, p: float, truth_sample: np.ndarray | None) -> float:
    """The latency threshold past which a share `p` of the law's requests lies."""
    if truth_sample is not None:
        return float(np.quantile(truth_sample, 1.0 - p))
    return float(np.exp(ndtri(1.0 - p)))


def wrong_calls(law: str, seed: int, steps: int, *, paired: bool = False) -> dict[float, dict[str, float]]:
    """Per true bad share: the share of steps (or, `paired`, of window pairs) called met and called missed."""
    rng = np.random.default_rng(seed)
    truth_sample = md1(np.random.default_rng(seed + 1), 4000).ravel() if law == "md1" else None
    met_error = paired_error() if paired else ALPHA
    out = {}
    for p in TRUTHS:
        threshold = _threshold(law, p, truth_sample)
        latency = _series(law, rng, steps, 2 * N if paired else N)
        windows = [latency[:, :N], latency[:, N:]] if paired else [latency]
        calls = [sequential_calls(window, threshold, met_error) for window in windows]
        met = np.logical_and.reduce([c == "met" for c in calls])
        out[p] = {"met": float(np.mean(met)), "missed": float(np.mean(calls[0] == "missed"))}
        if paired:
            out[p] |= {"one_window_met": float(np.mean(calls[0] == "met")),
                       "either_missed": float(np.mean((calls[0] == "missed") | (calls[1] == "missed")))}
    return out


@click.command()
@click.option("--steps", default=800, show_default=True, help="Simulated steps per law and true share.")
@click.option("--paired", is_flag=True, help="Judge pairs of back-to-back windows as a calibration's figure needs them.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the table as JSON here.")
def main(steps: int, paired: bool, out: Path | None) -> None:
    table = {law: wrong_calls(law, seed, steps, paired=paired) for law, seed in LAWS.items()}
    click.echo(f"{'law':12s} {'true bad share':>14s} {'called met':>10s} {'called missed':>13s}")
    for law, rows in table.items():
        for p, row in rows.items():
            wrong = "  <- wrong met" if p > ALLOWED and row["met"] else "  <- wrong missed" if p <= ALLOWED and row["missed"] else ""
            click.echo(f"{law:12s} {100 * p:13.2f}% {100 * row['met']:9.1f}% {100 * row['missed']:12.1f}%{wrong}")
    for law, rows in table.items():
        false_met = max(r["met"] for p, r in rows.items() if p > ALLOWED)
        false_missed = max(r["missed"] for p, r in rows.items() if p <= ALLOWED)
        click.echo(f"{law}: worst wrong met {100 * false_met:.1f}%, worst wrong missed {100 * false_missed:.1f}%")
    if out is not None:
        out.write_text(json.dumps({"steps_per_cell": steps, "requests_per_step": N, "allowed": ALLOWED,
                                   "paired": paired, "met_error_per_window": paired_error() if paired else ALPHA,
                                   "laws": {law: {str(p): r for p, r in rows.items()} for law, rows in table.items()}},
                                  indent=2))


if __name__ == "__main__":
    main()
