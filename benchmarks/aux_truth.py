"""How sure are compare, the failure share, drift, burn rate and token price? Each statement
measured on a hostile process whose truth is known, against its nominal error.

Processes (each breaks independence on purpose):

- same-code runs with run-to-run noise: log-normal latencies whose log follows an AR(1) over
  requests (a queue's memory, correlation 0.9), every run scaled by its own exp(N(0, tau));
  the compare gate's latency test with K baseline runs, paired (same schedule);
- failures in bursts: a request fails at 10% while a slow AR(1) is above a level and at 0.2%
  otherwise (true share 1%), runs of the same code; the failure-share test, with and without a
  run-to-run spread of the share itself;
- correlated windows: a soak's window figures with an AR(1) error (0 to 0.9) around a slope
  equal to the drift SLO's allowance; the drift SLO's false fails;
- bursts of long answers: token counts log-normal with a log-AR(1) over answers; how often the
  pool price's interval covers the true price (dollars over the expected tokens);
- the burn-rate case of a partial window: three bad requests in 12,000 at the run's start.

Each row: the statement, its nominal error, the measured rate with its Clopper-Pearson 95%
bounds, the replications, and how far it errs on the safe side (power, or width against the
truth's own spread). A row passes when the lower bound is at or under nominal.

    python -m benchmarks.aux_truth [--reps N] [--out docs/data/aux_truth.json] [--one-run]

`--one-run` measures only the compare rows with one baseline run and replaces them in --out.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.signal import lfilter
from scipy.stats import beta as beta_law
from scipy.stats import fisher_exact
from scipy.stats import t as student

from rushhour.reports.gate.failshare import judge_failures
from rushhour.reports.gate.judge import group_confidence, judge_arrays
from rushhour.reports.gate.runnoise import RunNoise, log_tails
from rushhour.reports.measures.drift import HOUR_S, trend
from rushhour.reports.measures.slos import evaluate_slos
from rushhour.reports.measures.tokencost import token_price
from rushhour.reports.schema import SloSpec

OUT = Path("docs/data/aux_truth.json")
GROUPS = 2  # the compare gate Bonferroni-splits its error over the groups it judges
CONFIDENCE = group_confidence(GROUPS)  # 97.5% per group: 1.25% one-sided false alarms stated
ALPHA = (1.0 - CONFIDENCE) / 2.0


def ar1(rng: np.random.Generator, reps: int, n: int, rho: float) -> np.ndarray:
    """Unit-variance stationary Gaussian AR(1) rows."""
    noise = rng.standard_normal((reps, n))
    if rho == 0.0:
        return noise
    noise[:, 0] /= np.sqrt(1.0 - rho**2)
    return np.asarray(lfilter([np.sqrt(1.0 - rho**2)], [1.0, -rho], noise, axis=1))


def bounds(hits: int, reps: int) -> tuple[float, float]:
    """Clopper-Pearson 95% interval of a rate."""
    low = float(beta_law.ppf(0.025, hits, reps - hits + 1)) if hits else 0.0
    high = float(beta_law.ppf(0.975, hits + 1, reps - hits)) if hits < reps else 1.0
    return low, high


def row(statement: str, process: str, nominal: float, hits: int, reps: int, *, kind: str = "error",
        **extra: Any) -> dict[str, Any]:
    """One table row; `kind` "error" passes at or under nominal, "coverage" at or over it."""
    low, high = bounds(hits, reps)
    rate = hits / reps
    ok = low <= nominal if kind == "error" else high >= nominal
    return {"statement": statement, "process": process, "kind": kind, "nominal": nominal, "measured": rate,
            "low": low, "high": high, "reps": reps, "passes": bool(ok), **extra}


def latency_runs(rng: np.random.Generator, runs: int, n: int, tau: float, rho: float = 0.9,
                 sigma: float = 0.5) -> list[np.ndarray]:
    """`runs` same-schedule runs: log latency = per-request base + AR(1) noise + a run effect."""
    base = rng.normal(0.0, sigma, n)
    noise = ar1(rng, runs, n, rho) * sigma
    effects = rng.normal(0.0, tau, (runs, 1))
    return list(100.0 * np.exp(base + noise + effects))


def compare_false_alarms(baseline_runs: int, tau: float, reps: int, seed: int = 1,
                         slowdown: float = 1.0, n: int = 1_000) -> tuple[int, int]:
    """Latency regressions called (per group) with `baseline_runs` same-code runs and a current
    run `slowdown` times slower.

    The gate's interval holds the runs' t prediction interval, so a regression needs that
    interval's lower end above 1; where it is not (RunNoise.half_width, the gate's own code),
    the costly bootstrap is skipped: its verdict could only be "no regression"."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        runs = latency_runs(rng, baseline_runs + 1, n, tau)
        current = runs[0] * slowdown
        if baseline_runs >= 2 and not _t_part_rejects(current, runs[1:]):
            continue
        verdict = judge_arrays(current, runs[1:], paired=True, percentile=99.0,
                               confidence=CONFIDENCE, min_change=0.10, rng=rng)
        hits += bool(verdict.latency_regression)
    return hits, reps


def _t_part_rejects(current: np.ndarray, baselines: list[np.ndarray]) -> bool:
    tails = log_tails(baselines, 99.0)
    half = RunNoise(runs=len(baselines), tau=0.0, spread=0.0, sampling=0.0, log_tails=tails).half_width(CONFIDENCE)
    [now] = log_tails([current], 99.0)
    return half is None or now - float(np.mean(tails)) - half > 0.0


def failure_flags(rng: np.random.Generator, runs: int, n: int, share: float = 0.01, steps: float = 50.0,
                  share_sd: float = 0.0) -> list[np.ndarray]:
    """Runs of 0/1 failure flags in bursts: 10% failures in the on state, 0.2% off, true share
    `share` (times a run's own exp(N(0, share_sd)) when the share wanders between runs)."""
    on_fail, off_fail = 0.10, 0.002
    from scipy.special import ndtri

    out = []
    for _ in range(runs):
        target = share * float(np.exp(rng.normal(0.0, share_sd))) if share_sd else share
        on_share = min(max((target - off_fail) / (on_fail - off_fail), 1e-6), 0.99)
        on = ar1(rng, 1, n, float(np.exp(-1.0 / steps)))[0] > -float(ndtri(on_share))
        out.append(rng.random(n) < np.where(on, on_fail, off_fail))
    return out


def failure_alarms(baseline_runs: int, reps: int, seed: int = 2, *, share_sd: float = 0.0,
                   factor: float = 1.0, steps: float = 50.0, n: int = 6_000) -> tuple[int, int]:
    """Failure-share regressions called with the current run's share `factor` times the baseline's."""
    return failure_alarms_both(baseline_runs, reps, seed, share_sd=share_sd, factor=factor, steps=steps, n=n)[:2]


def failure_alarms_both(baseline_runs: int, reps: int, seed: int = 2, *, share_sd: float = 0.0,
                        factor: float = 1.0, steps: float = 50.0, n: int = 6_000) -> tuple[int, int, float]:
    """failure_alarms, and the share a Fisher exact test on single requests would have called."""
    rng = np.random.default_rng(seed)
    hits, naive = 0, 0
    for _ in range(reps):
        base = failure_flags(rng, baseline_runs, n, steps=steps, share_sd=share_sd)
        [cur] = failure_flags(rng, 1, n, share=0.01 * factor, steps=steps, share_sd=share_sd)
        verdict = judge_failures(cur, base, alpha=ALPHA)
        hits += verdict.regression
        pooled = np.concatenate(base)
        table = np.array([[cur.sum(), cur.size - cur.sum()], [pooled.sum(), pooled.size - pooled.sum()]])
        naive += bool(fisher_exact(table, alternative="greater").pvalue < ALPHA
                      and cur.mean() - pooled.mean() >= 0.005)
    return hits, reps, naive / reps


def drift_fails(rho: float, windows: int, reps: int, seed: int = 3, excess_sd: float = 0.0) -> dict[str, Any]:
    """Drift SLO fails with the true slope at the allowance (+ `excess_sd` of the slope's true sd),
    and the interval's median half-width against 1.96 true standard deviations."""
    rng = np.random.default_rng(seed)
    t = (np.arange(windows) + 0.5) * HOUR_S
    noise = ar1(rng, reps, windows, rho)
    x = t / HOUR_S
    dx = x - x.mean()
    lag = np.abs(np.subtract.outer(np.arange(windows), np.arange(windows)))
    true_sd = float(np.sqrt(dx @ (rho**lag) @ dx) / (dx @ dx))
    slope = 1.0 + excess_sd * true_sd
    values = 100.0 + slope * x + noise
    lines = [trend(t, row) for row in values]
    fails = sum(1 for line in lines if line["ci"][0] > 1.0)
    halves = [(line["ci"][1] - line["ci"][0]) / 2 for line in lines]
    return {"hits": fails, "reps": reps, "width_vs_truth": float(np.median(halves) / (1.96 * true_sd)),
            "plain_t": _plain_fails(x, values)}


def _plain_fails(x: np.ndarray, values: np.ndarray) -> float:
    """The share a plain least-squares t interval (independent windows) fails, for comparison."""
    dx = x - x.mean()
    slopes = (values - values.mean(axis=1, keepdims=True)) @ dx / (dx @ dx)
    residual = values - values.mean(axis=1, keepdims=True) - slopes[:, None] * dx
    stderr = np.sqrt((residual**2).sum(axis=1) / (x.size - 2) / (dx @ dx))
    return float(np.mean(slopes - student.ppf(0.975, x.size - 2) * stderr > 1.0))


def token_coverage(rho: float, reps: int, seed: int = 4, n: int = 3_000, sigma: float = 0.8) -> dict[str, Any]:
    """Pool price intervals that cover usd / (n E[tokens]) with log tokens AR(1) over answers."""
    rng = np.random.default_rng(seed)
    logs = 5.0 + sigma * ar1(rng, reps, n, rho)
    truth = 1.0 / (n * float(np.exp(5.0 + sigma**2 / 2))) * 1e6
    prices = [token_price(1.0, np.exp(row)) for row in logs]
    covered = sum(1 for p in prices if p["ci"][0] <= truth and (p["ci"][1] is None or truth <= p["ci"][1]))
    effective = float(np.median([p["effective_answers"] for p in prices]))
    return {"hits": covered, "reps": reps, "effective_answers": effective}


def burn_cases() -> list[dict[str, Any]]:
    """A partial window at the start: 12,000 requests over 600 s, the first three bad, 99.9% allowed."""
    times = np.arange(12_000) * 0.05 + 0.025
    frame = pd.DataFrame({"intended_s": times, "sent_s": times, "done_s": times + 0.01, "latency_ms": 10.0,
                          "ok": np.arange(12_000) >= 3, "status": 200, "phase": ""})
    spec = SloSpec(name="a", kind="availability", objective=0.999)
    cases = []
    for scale in (1.0, 60.0):
        [slo] = evaluate_slos(frame, frame["phase"], [], [spec], 600.0, scale)
        cases.append({"case": f"3 bad of 12,000 at the start, time scale {scale:g}",
                      "pages": [rule["pages"] for rule in slo["burn_rates"]],
                      "evaluated": [rule["evaluated"] for rule in slo["burn_rates"]]})
    return cases


def one_run_rows(reps: int) -> list[dict[str, Any]]:
    """Compare with one baseline run: held by the runs' time sections when runs differ by no more
    than sampling (the claim), and what a run effect the one run cannot see does to it (not claimed)."""
    rows = []
    for tau, claimed in ((0.0, True), (0.1, False)):
        hits, n = compare_false_alarms(1, tau, reps, seed=30 + int(100 * tau))
        power, m = compare_false_alarms(1, tau, max(reps // 8, 25), seed=35 + int(100 * tau), slowdown=1.5)
        rows.append(row("compare: latency regression on same code", f"1 baseline run, run effect sd {tau:g}, "
                        "AR(1) 0.9 latencies", ALPHA, hits, n, power_x1_5=power / m, claimed=claimed))
    return rows


def table(reps: int) -> dict[str, Any]:
    """Every row of the bench at `reps` replications (fewer for the slow ones)."""
    rows = []
    for k, tau in ((2, 0.1), (2, 0.2), (3, 0.2), (5, 0.2)):
        hits, n = compare_false_alarms(k, tau, reps, seed=10 + k)
        power, m = compare_false_alarms(k, tau, max(reps // 8, 25), seed=20 + k, slowdown=1.5)
        rows.append(row("compare: latency regression on same code", f"{k} baseline runs, run effect sd {tau:g}, "
                        "AR(1) 0.9 latencies", ALPHA, hits, n, power_x1_5=power / m))
    rows += one_run_rows(reps)
    for steps, k, share_sd in ((20, 1, 0.0), (50, 1, 0.0), (200, 1, 0.0), (50, 3, 0.0), (50, 5, 0.3)):
        hits, n, naive = failure_alarms_both(k, reps, seed=40 + steps + k, steps=steps, share_sd=share_sd)
        power, m = failure_alarms(k, max(reps // 4, 25), seed=50 + steps + k, steps=steps, share_sd=share_sd,
                                  factor=4.0)
        rows.append(row("compare: failure-share regression on same code", f"bursts (correlation {steps} requests), "
                        f"{k} baseline run(s), share run-to-run sd {share_sd:g}", ALPHA, hits, n,
                        power_x4=power / m, single_request_fisher=naive))
    for windows in (12, 24):
        for rho in (0.0, 0.3, 0.5, 0.8):
            found = drift_fails(rho, windows, reps * 2, seed=60 + windows + int(10 * rho))
            caught = drift_fails(rho, windows, max(reps // 2, 50), seed=70 + windows, excess_sd=4.0)
            rows.append(row("drift SLO: false fail (slope at the allowance)", f"{windows} windows, AR(1) {rho:g}",
                            0.025, found["hits"], found["reps"], width_vs_truth=found["width_vs_truth"],
                            plain_t=found["plain_t"],
                            power_at_4_sd=caught["hits"] / caught["reps"]))
    for rho in (0.0, 0.5, 0.9, 0.98):
        found = token_coverage(rho, reps, seed=80 + int(100 * rho))
        rows.append(row("token price: pool interval covers the true price", f"log tokens AR(1) {rho:g}", 0.95,
                        found["hits"], found["reps"], kind="coverage", effective_answers=found["effective_answers"]))
    return {"rows": rows, "burn_cases": burn_cases()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--one-run", action="store_true",
                        help="Measure only the one-baseline-run compare rows and replace those in --out.")
    args = parser.parse_args()
    started = time.perf_counter()
    result = _one_run_update(args.out, args.reps) if args.one_run else table(args.reps) | {
        "date": "2026-12-04", "machine": "2-core VM, no GPU",
        "command": f"python -m benchmarks.aux_truth --reps {args.reps}"}
    result["one_run_seconds" if args.one_run else "seconds"] = round(time.perf_counter() - started, 1)
    print(f"{'statement':<50}{'process':<62}{'nominal':>8}{'measured':>9}{'95% bounds':>18}  pass")
    for r in result["rows"]:
        print(f"{r['statement']:<50}{r['process']:<62}{r['nominal']:>8.4f}{r['measured']:>9.4f}"
              f"  [{r['low']:.4f}, {r['high']:.4f}]  {'yes' if r['passes'] else 'NO'}")
    for case in result["burn_cases"]:
        print(f"burn: {case['case']}: pages {case['pages']}, evaluated {case['evaluated']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} in {round(time.perf_counter() - started, 1)} s")


def _one_run_update(out: Path, reps: int) -> dict[str, Any]:
    """The document at `out` with its one-baseline-run compare rows measured again."""
    document: dict[str, Any] = json.loads(out.read_text())
    kept = [r for r in document["rows"] if not r["process"].startswith("1 baseline run")]
    at = next((i for i, r in enumerate(document["rows"]) if r["process"].startswith("1 baseline run")), len(kept))
    document["rows"] = [*kept[:at], *one_run_rows(reps), *kept[at:]]
    document["one_run_command"] = f"python -m benchmarks.aux_truth --one-run --reps {reps}"
    return document


if __name__ == "__main__":
    main()
