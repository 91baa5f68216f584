"""What an A/B run compares and how it decides: the scenario's latency SLOs, per priority.

Each latency SLO (latency, TTFT, TPOT or ITL) names a percentile and a population (its priority,
mode and request kind); an SLO without a priority is compared per priority, since a regression in
one class must not hide behind another. The failure share is one question over every compared
request of the night: a failure has no priority of its own to hide behind, and a question over all
the night's attempts can show a share within the margin where one class's alone could not.

A percentile is the night's percentile of each arm's answered requests. Its comparison says
*regression* when the ratio's lower bound lies above 1 and the ratio reaches the threshold, *no
regression* when its upper bound lies below the threshold (the SLO's own `ab_threshold` where it
gives one, the run's otherwise: a P99 of a few thousand answers can only be resolved at a wider
threshold than the body of the distribution), *inconclusive* otherwise (with the
smallest change the run could detect), and *not compared* when an arm holds too few answers for
that percentile. The failure share is a regression when significantly worse, and passes only when
shown not worse by more than the margin.

The two sides of `confidence` spend their errors differently. A night is a regression when ANY
test says so, so the regression side shares its error among the tests (Bonferroni): adding SLOs
does not add false alarms. A night passes only when EVERY test shows its own "not worse", an
intersection-union test (Berger, 1982), whose error is at most that of each test: each pass side
keeps the whole one-sided error, and adding SLOs makes a pass harder, never easier.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rushhour.reports.ab.paired import (
    DEFAULT_REPLICATES,
    ArmSample,
    ErrorTest,
    RatioTest,
    block_weights,
    error_test,
    ratio_test,
)
from rushhour.reports.rundata.attempts import attempted
from rushhour.reports.schema import LATENCY_KINDS, SloSpec

DEFAULT_THRESHOLD = 1.10
DEFAULT_CONFIDENCE = 0.90
"""Two-sided, for the whole family: each side (regression, or no regression) a 5% test."""

DEFAULT_ERROR_MARGIN = 0.005
"""How much higher (absolute, 0.5 percentage points) the candidate's failure share may be shown
not to be for a pass: half the budget of a 99% availability objective."""
VERDICTS = ("no_regression", "regression", "inconclusive", "not_compared")

__all__ = ["DEFAULT_CONFIDENCE", "DEFAULT_ERROR_MARGIN", "DEFAULT_THRESHOLD", "Comparison", "NoLatencySloError", "Population",
           "compare_populations", "error_text", "latency_slos", "populations", "slo_thresholds", "tails"]


class NoLatencySloError(ValueError):
    """The scenario has no latency SLO, so an A/B run has no percentile to compare."""


@dataclass(frozen=True)
class Population:
    """Who one comparison looks at, and which (column, percentile, SLO name) it compares."""

    name: str
    priority: str | None
    mode: str | None
    request_kind: str | None
    metrics: tuple[tuple[str, float, str], ...]

    def mask(self, requests: pd.DataFrame) -> np.ndarray:
        keep = np.ones(len(requests), bool)
        for column, value in (("priority", self.priority), ("mode", self.mode), ("kind", self.request_kind)):
            if value is not None:
                keep &= requests[column].astype(str).to_numpy() == value
        return keep

    def scope(self) -> dict[str, str]:
        return {k: v for k, v in (("priority", self.priority), ("mode", self.mode),
                                  ("request_kind", self.request_kind)) if v is not None}


@dataclass(frozen=True)
class Comparison:
    """One percentile of one population: the ratio test, the population's error test, the verdict."""

    population: Population
    column: str
    slo: str
    ratio: RatioTest
    errors: ErrorTest
    samples: tuple[int, int]
    verdict: str
    reason: str
    threshold: float = DEFAULT_THRESHOLD


def latency_slos(slos: Sequence[SloSpec], source: str = "the scenario") -> list[SloSpec]:
    """The SLOs with a percentile to compare; NoLatencySloError (with the reason) when there is none."""
    found = [slo for slo in slos if slo.kind in LATENCY_KINDS and slo.percentile is not None]
    if not found:
        kinds = ", ".join(sorted({slo.kind for slo in slos})) or "none"
        raise NoLatencySloError(f"{source} has no latency SLO (kind latency, ttft, tpot or itl, with a percentile; "
                                f"its SLO kinds: {kinds}), so an A/B run has no percentile to compare. Add one, e.g. "
                                "{name: p99, kind: latency, percentile: 99, threshold_ms: 2000}.")
    return found


def slo_thresholds(slos: Sequence[SloSpec]) -> dict[str, float]:
    """The latency SLOs that carry their own A/B threshold, by SLO name."""
    return {slo.name: float(slo.ab_threshold) for slo in slos
            if slo.kind in LATENCY_KINDS and slo.ab_threshold is not None}


def populations(slos: Sequence[SloSpec], priorities: Sequence[str]) -> list[Population]:
    """One population per (priority, mode, request kind) the latency SLOs name, SLOs without a
    priority split over `priorities`; each holds the percentiles compared over it."""
    found: dict[tuple[str | None, str | None, str | None], list[tuple[str, float, str]]] = {}
    for slo in latency_slos(slos):
        split: list[str | None] = [slo.priority] if slo.priority else [*sorted(priorities)] or [None]
        for priority in split:
            metrics = found.setdefault((priority, slo.mode, slo.request_kind), [])
            if all((slo.column, slo.percentile) != (c, p) for c, p, _ in metrics):
                metrics.append((slo.column, float(slo.percentile or 0), slo.name))
    return [Population(_name(key), *key, tuple(metrics)) for key, metrics in found.items()]


def _name(key: tuple[str | None, str | None, str | None]) -> str:
    parts = [v for v in key if v]
    return ", ".join(parts) or "all"


def tails(confidence: float, tests: int) -> tuple[float, float]:
    """Each test's one-sided errors: the regression side's share of the family's, and the pass side's whole."""
    side = (1.0 - confidence) / 2.0
    return side / max(tests, 1), side


def compare_populations(requests: pd.DataFrame, pops: Sequence[Population], *, pairs: int, threshold: float,
                        confidence: float, seed: int, margin: float = DEFAULT_ERROR_MARGIN,
                        first_pair: int = 0, thresholds: Mapping[str, float] | None = None) -> list[Comparison]:
    """Every comparison of the run over pairs `first_pair`.. (the ones before it warmed both arms),
    the regression side at the Bonferroni share of `confidence`, the pass side at its whole; each
    SLO judged at its entry in `thresholds` (by SLO name), the others at `threshold`."""
    alarm, passing = tails(confidence, sum(len(p.metrics) for p in pops) + 1)
    weights = block_weights(max(pairs - first_pair, 0), DEFAULT_REPLICATES, seed)
    every = np.logical_or.reduce([pop.mask(requests) for pop in pops]) if pops else np.zeros(len(requests), bool)
    errors = error_test(*_arm_samples(requests, every, "latency_ms", first_pair), weights, alarm_tail=alarm,
                        pass_tail=passing, margin=margin)
    out = []
    for pop in pops:
        for column, percentile, slo in pop.metrics:
            own = float((thresholds or {}).get(slo, threshold))
            base, cand = _arm_samples(requests, pop.mask(requests), column, first_pair)
            ratio = ratio_test(base, cand, percentile, weights, alarm_tail=alarm, pass_tail=passing,
                               threshold=own)
            verdict, reason = judge(ratio, errors, own)
            out.append(Comparison(pop, column, slo, ratio, errors, (base.n, cand.n), verdict, reason, own))
    return out


def _arm_samples(requests: pd.DataFrame, rows: np.ndarray, column: str, first_pair: int
                 ) -> tuple[ArmSample, ArmSample]:
    """Both arms' attempted requests among `rows` (never-sent rows left out), by pair counted from `first_pair`."""
    pair = requests["trial"].to_numpy(dtype=np.int64) // 2 - first_pair
    keep = rows & attempted(requests) & (pair >= 0)
    arm = requests["arm"].astype(str).to_numpy()
    values, ok = requests[column].to_numpy(dtype=float), requests["ok"].to_numpy(dtype=bool)
    return tuple(ArmSample.of(values[keep & (arm == a)], ok[keep & (arm == a)], pair[keep & (arm == a)])
                 for a in ("baseline", "candidate"))  # type: ignore[return-value]


def judge(ratio: RatioTest, errors: ErrorTest, threshold: float) -> tuple[str, str]:
    """The verdict of one comparison and the reason in a sentence."""
    label = f"P{ratio.percentile:g} of answered requests"
    if errors.worse:
        return "regression", (f"the candidate failed {_share(errors.candidate)} of attempts against "
                              f"{_share(errors.baseline)} for the baseline, significantly more")
    if not ratio.compared:
        return "not_compared", f"not compared: {ratio.not_compared}"
    shown = f"{label} ratio {ratio_text(ratio.ratio)} [{ratio_text(ratio.low)}, {ratio_text(ratio.high)}]"
    if ratio.low > 1.0 and ratio.ratio >= threshold:
        return "regression", f"{shown} lies above 1 and reaches the x{threshold:g} threshold"
    if ratio.high < threshold:
        return "no_regression", f"{shown} lies below the x{threshold:g} threshold"
    return "inconclusive", (f"{shown} straddles the x{threshold:g} threshold; the smallest change this run "
                            f"could detect is {mde_text(ratio)}")


def error_text(errors: ErrorTest) -> str:
    """What the failure shares show, in a clause: worse, not worse by more than the margin, or neither."""
    shares = (f"failures {_share(errors.candidate)} (candidate) against {_share(errors.baseline)} (baseline), "
              f"difference {_points(errors.difference)} [{_points(errors.low)}, {_points(errors.high)}]")
    if errors.worse:
        return f"{shares}: significantly worse"
    if errors.not_worse:
        return f"{shares}: shown not worse by more than the {100 * errors.margin:.2f} pp margin"
    return f"{shares}: not shown within the {100 * errors.margin:.2f} pp margin"


def _points(value: float) -> str:
    return "n/a" if np.isnan(value) else f"{100 * value:+.2f} pp"


def ratio_text(value: float) -> str:
    """x1.07; "x inf" when failures sit beyond the percentile."""
    if np.isnan(value):
        return "n/a"
    return "x inf" if np.isinf(value) else f"x{value:.2f}"


def mde_text(ratio: RatioTest) -> str:
    """The minimum detectable effect, or why there is none: too few pairs for the confidence."""
    if np.isfinite(ratio.mde):
        return f"x{ratio.mde:.2f}"
    return f"unknown ({ratio.not_compared})" if ratio.not_compared else "unknown"


def _share(value: float) -> str:
    return "n/a" if np.isnan(value) else f"{100 * value:.1f}%"
