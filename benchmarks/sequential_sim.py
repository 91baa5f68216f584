"""Benchmark: the capacity step's wrong calls over thousands of simulated steps of known truth.

Each simulated step is 600 requests (20 req/s for a 30 s window) judged against a P99 objective
at the planned looks of `reports.sequential`, the way `reports.stepstats` judges a live step (the
pilot indicator floored at half the threshold). Latencies come from three laws: independent
log-normal draws, a log-normal AR(1) series (neighbours correlated, rho 0.6), and an M/D/1 queue
at 80% load (Lindley's recursion, started in its stationary state), each at bad shares on both
sides of the allowed 1%. A wrong "missed" is a call of missed where the truth is at most 1%, a
wrong "met" one of met where it is above. Vectorised: the whole table takes seconds.

Usage: python -m benchmarks.sequential_sim [--steps 800] [--out docs/data/sequential-errors.json]
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
from scipy.special import ndtri

from reports.sequential import PILOT_FLOOR, look_call, look_fractions

N = 600
ALLOWED = 0.01
TRUTHS = (0.001, 0.004, 0.007, 0.009, 0.01, 0.0115, 0.013, 0.016, 0.025)
LAWS = {"independent": 11, "ar1": 12, "md1": 13}


def sequential_calls(latency: np.ndarray, threshold: float) -> np.ndarray:
    """Every step's call ("met", "missed" or "open") over the planned looks, first call wins."""
    n = latency.shape[1]
    calls = np.full(latency.shape[0], "open", dtype=object)
    for look, share in enumerate(look_fractions(), start=1):
        seen = latency[:, : round(share * n)]
        bad = seen > threshold
        call = look_call(bad, np.zeros_like(bad), ALLOWED, look=look, score=seen, floor=PILOT_FLOOR * threshold)
        undecided = calls == "open"
        calls[undecided & call.met] = "met"
        calls[undecided & call.missed] = "missed"
    return calls


def independent(rng: np.random.Generator, steps: int) -> np.ndarray:
    return np.exp(rng.standard_normal((steps, N)))


def ar1(rng: np.random.Generator, steps: int, rho: float = 0.6) -> np.ndarray:
    z = np.empty((steps, N))
    z[:, 0] = rng.standard_normal(steps)
    noise = rng.standard_normal((steps, N)) * np.sqrt(1.0 - rho**2)
    for i in range(1, N):
        z[:, i] = rho * z[:, i - 1] + noise[:, i]
    return np.exp(z)


def md1(rng: np.random.Generator, steps: int, load: float = 0.8, burn: int = 400) -> np.ndarray:
    """Sojourn times of an M/D/1 queue (service 1, utilisation `load`), `steps` stationary runs."""
    gaps = rng.exponential(1.0 / load, (steps, burn + N))
    wait = np.zeros(steps)
    out = np.empty((steps, N))
    for i in range(burn + N):
        if i >= burn:
            out[:, i - burn] = wait + 1.0
        wait = np.maximum(0.0, wait + 1.0 - gaps[:, i])
    return out


def wrong_calls(law: str, seed: int, steps: int) -> dict[float, dict[str, float]]:
    """Per true bad share: the share of steps called met and called missed."""
    rng = np.random.default_rng(seed)
    truth_sample = md1(np.random.default_rng(seed + 1), 4000).ravel() if law == "md1" else None
    out = {}
    for p in TRUTHS:
        if truth_sample is not None:
            latency, threshold = md1(rng, steps), float(np.quantile(truth_sample, 1.0 - p))
        else:
            latency = independent(rng, steps) if law == "independent" else ar1(rng, steps)
            threshold = float(np.exp(ndtri(1.0 - p)))
        calls = sequential_calls(latency, threshold)
        out[p] = {"met": float(np.mean(calls == "met")), "missed": float(np.mean(calls == "missed"))}
    return out


@click.command()
@click.option("--steps", default=800, show_default=True, help="Simulated steps per law and true share.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the table as JSON here.")
def main(steps: int, out: Path | None) -> None:
    table = {law: wrong_calls(law, seed, steps) for law, seed in LAWS.items()}
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
                                   "laws": {law: {str(p): r for p, r in rows.items()} for law, rows in table.items()}},
                                  indent=2))


if __name__ == "__main__":
    main()
