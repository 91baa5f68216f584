"""An A/B results folder in, the ab.json document out: settings, arms, trials, comparisons, verdict.

The run's settings (threshold, the SLOs' own thresholds, confidence, error margin, the trial design
with its warm-up, the targets, the runner's calibration) are read back from its `ab` event in events.jsonl, so
`rushhour report DIR` rebuilds the same judgement from disk.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.kernel.contract import AB_COLUMNS, ExitCode
from rushhour.reports.ab.calibration import quote
from rushhour.reports.ab.confounds import cache_check
from rushhour.reports.ab.groups import (
    DEFAULT_ERROR_MARGIN,
    Comparison,
    compare_populations,
    error_text,
    mde_text,
    populations,
    ratio_text,
    slo_thresholds,
    tails,
)
from rushhour.reports.estimate.intervals import grouped_percentiles
from rushhour.reports.rundata.attempts import attempted
from rushhour.reports.rundata.results import ResultsError, RunData
from rushhour.reports.summary.aggregate import calibration_section, generator_health

SCHEMA_VERSION = 2
ALL_REQUESTS = "all compared requests"
EXIT_CODES = {"no_regression": ExitCode.OK, "regression": ExitCode.FAILED, "inconclusive": ExitCode.INVALID,
              "invalid": ExitCode.INVALID}

__all__ = ["ab_document", "ab_settings"]


def ab_settings(run: RunData) -> dict[str, Any]:
    """The run's `ab` event (threshold, confidence, design, targets); ResultsError if not an A/B run."""
    missing = [c for c in AB_COLUMNS if c not in run.requests.columns]
    events = run.events_of("ab")
    if missing or not events:
        what = f"requests.parquet lacks {', '.join(missing)}" if missing else "events.jsonl has no ab event"
        raise ResultsError(f'"{run.root}" is not the folder of an A/B run ({what}).')
    return events[-1]


def _stated(run: RunData, settings: dict[str, Any], name: str) -> float:
    """A setting the verdict stands on, as the run recorded it: never a default put in its place."""
    value = settings.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise ResultsError(f'"{run.root}": the ab event in events.jsonl has no valid {name} ({value!r}); the '
                           f"verdict stands on it, so it is not guessed.")
    return float(value)


def _slo_thresholds(run: RunData, settings: dict[str, Any]) -> dict[str, float]:
    """The SLOs' own thresholds as the ab event recorded them (the scenario's for runs that predate
    the record); each above 1, or ResultsError naming it."""
    given = settings.get("slo_thresholds")
    found = slo_thresholds(run.scenario.slos) if given is None else given
    if not isinstance(found, dict):
        raise ResultsError(f'"{run.root}": the ab event in events.jsonl has slo_thresholds {found!r}, not a mapping '
                           "of SLO name to threshold.")
    for name, value in found.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 1:
            raise ResultsError(f'"{run.root}": the ab event in events.jsonl gives SLO "{name}" the threshold '
                               f"{value!r}; a threshold is a ratio above 1.")
    return {str(k): float(v) for k, v in found.items()}


def ab_document(run: RunData) -> dict[str, Any]:
    """Every figure of ab.json, plain JSON values (infinite ratios as null with a text form)."""
    settings = ab_settings(run)
    threshold, confidence = _stated(run, settings, "threshold"), _stated(run, settings, "confidence")
    margin = float(settings.get("error_margin", DEFAULT_ERROR_MARGIN))  # absent from runs that predate it
    own = _slo_thresholds(run, settings)
    design = dict(settings.get("design") or {})
    trials = int(design.get("trials") or int(run.requests["trial"].max()) + 1)
    warmup = int(design.get("warmup_pairs") or 0)
    requests = run.requests
    pops = populations(run.scenario.slos, sorted(set(requests["priority"].astype(str)) - {""}))
    comparisons = compare_populations(requests, pops, pairs=trials // 2, threshold=threshold,
                                      confidence=confidence, seed=int(design.get("seed") or 0), margin=margin,
                                      first_pair=warmup, thresholds=own)
    tests = sum(len(p.metrics) for p in pops) + 1
    generator = generator_health(run)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "scenario": run.scenario.name, "threshold": threshold,
        "slo_thresholds": own,
        "confidence": confidence, "error_margin": margin, "tests": tests,
        "test_confidence": 1.0 - (1.0 - confidence) / tests, "pass_confidence": 1.0 - tails(confidence, tests)[1],
        "design": design, "targets": settings.get("targets", {}), "generator": generator,
        "aborted": [e.get("reason", "") for e in run.events_of("abort")],
        "arms": {arm: _arm_counts(requests, arm) for arm in ("baseline", "candidate")},
        "cache": cache_check(requests, warmup).model_dump(),
        "calibration": settings.get("calibration"), "runner": quote(settings.get("calibration")),
        "rate": rate_basis(run),
        "trials": trial_rows(requests, design, pops[0].metrics[0] if pops else ("latency_ms", 99.0, "")),
        "groups": [_group(c) for c in comparisons],
        "errors": _error_rows(comparisons),
    }
    doc["verdict"], doc["sentence"], doc["reason"] = overall(doc, comparisons)
    doc["sentence"] = f"{doc['sentence'][:-1]}; {doc['runner']}."
    if doc["rate"] is not None:
        doc["sentence"] = f"{doc['sentence'][:-1]}; {doc['rate']['text']}."
    doc["exit_code"] = int(EXIT_CODES[doc["verdict"]])
    return doc


def rate_basis(run: RunData) -> dict[str, Any] | None:
    """The relative peak each arm was loaded at, calibrated on the baseline before the night (None:
    the scenario gave its rate as a number)."""
    section = calibration_section(run.scenario.traffic.calibration)
    if section is None:
        return None
    return {**section, "calibrated_on": "baseline",
            "text": f"each arm loaded at the rate calibrated on the baseline, {section['text']}"}


def _error_rows(comparisons: list[Comparison]) -> list[dict[str, Any]]:
    """The failure-share row: one question over every compared request of the night."""
    seen: dict[str, dict[str, Any]] = {}
    for c in comparisons:
        e = c.errors
        seen.setdefault(ALL_REQUESTS, {
            "population": ALL_REQUESTS, "baseline": _finite(e.baseline), "candidate": _finite(e.candidate),
            "difference": _finite(e.difference), "ci_low": _finite(e.low), "ci_high": _finite(e.high),
            "margin": e.margin, "worse": e.worse, "not_worse": e.not_worse, "text": error_text(e)})
    return list(seen.values())


def _arm_counts(requests: pd.DataFrame, arm: str) -> dict[str, Any]:
    rows = requests["arm"].astype(str).to_numpy() == arm
    tried = attempted(requests) & rows
    ok = requests["ok"].to_numpy(bool) & tried
    share = float((tried & ~ok).sum() / tried.sum()) if tried.any() else None
    return {"scheduled": int(rows.sum()), "attempted": int(tried.sum()), "ok": int(ok.sum()),
            "failed": int((tried & ~ok).sum()), "error_share": share}


def trial_rows(requests: pd.DataFrame, design: dict[str, Any], metric: tuple[str, float, str]) -> list[dict[str, Any]]:
    """Per trial: its arm, time slice, attempts, failures and the first compared percentile over its
    answered requests (a slice's own figure, drawn in the chart; verdicts use the night's)."""
    column, percentile, _ = metric
    tried = attempted(requests)
    trial = requests["trial"].to_numpy(np.int64)
    count = int(design.get("trials") or (trial.max() + 1 if len(trial) else 0))
    values = np.where(tried & requests["ok"].to_numpy(bool), requests[column].to_numpy(float), np.nan)
    tail, n = grouped_percentiles(trial, values, percentile, count)
    failed = np.bincount(trial[tried & ~requests["ok"].to_numpy(bool)], minlength=count)
    arms = list(design.get("arms") or [])
    width = float(design.get("trial_s") or 0.0)
    slot = (lambda k: k // 2) if design.get("interleave") == "requests" else (lambda k: k)
    return [{"trial": k, "arm": arms[k] if k < len(arms) else "", "start_s": slot(k) * width,
             "end_s": (slot(k) + 1) * width,
             "attempted": int(n[k]), "failed": int(failed[k]), "percentile": percentile,
             "value_ms": float(tail[k]) if np.isfinite(tail[k]) else None} for k in range(count)]


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _group(c: Comparison) -> dict[str, Any]:
    r, e = c.ratio, c.errors
    return {
        "name": f"{c.population.name}: {c.slo}", "population": c.population.name, "scope": c.population.scope(),
        "slo": c.slo, "metric": c.column, "percentile": r.percentile, "compared": r.compared, "not_compared": r.not_compared,
        "samples": {"baseline": c.samples[0], "candidate": c.samples[1]}, "pairs": r.pairs,
        "baseline_ms": _finite(r.baseline), "candidate_ms": _finite(r.candidate),
        "ratio": _finite(r.ratio), "ci_low": _finite(r.low), "ci_high": _finite(r.high),
        "ratio_text": f"{ratio_text(r.ratio)} [{ratio_text(r.low)}, {ratio_text(r.high)}]",
        "mde": _finite(r.mde), "mde_text": mde_text(r),
        "errors": {"baseline": _finite(e.baseline), "candidate": _finite(e.candidate),
                   "difference": _finite(e.difference), "ci_low": _finite(e.low), "ci_high": _finite(e.high),
                   "margin": e.margin, "worse": e.worse, "not_worse": e.not_worse},
        "threshold": c.threshold, "verdict": c.verdict, "reason": c.reason,
    }


def overall(doc: dict[str, Any], comparisons: list[Comparison]) -> tuple[str, str, str]:
    """The run's verdict, its one-sentence statement (ratio and interval), and the longer reason."""
    level = (f"lower bound at {100 - 50 * (1 - doc['test_confidence']):.1f}%, upper at "
             f"{100 * doc['pass_confidence']:.0f}%, one-sided:")
    if doc["aborted"] or not doc["generator"]["valid"]:
        why = "; ".join(doc["aborted"] + doc["generator"]["reasons"])
        return "invalid", f"Invalid measurement: {why}; no verdict.", why
    if doc["cache"]["confounded"]:
        why = doc["cache"]["sentence"]
        return "invalid", f"Invalid measurement: {why}; no verdict.", why
    reasons = "; ".join([f"{x.population.name} {x.slo}: {x.reason}" for x in comparisons]
                        + [f"{row['population']}: {row['text']}" for row in doc["errors"]])
    skipped = [c for c in comparisons if not c.ratio.compared]
    regressions = [c for c in comparisons if c.verdict == "regression"]
    if regressions:
        c = max(regressions, key=lambda x: (x.errors.worse, np.nan_to_num(x.ratio.high, nan=np.inf)))
        return "regression", _sentence("regression", c, level), reasons
    compared = [c for c in comparisons if c.ratio.compared]
    if not compared:
        why = "; ".join(f"{c.population.name} {c.reason.removeprefix('not compared: ')}" for c in skipped)
        return "inconclusive", f"Inconclusive: no percentile could be compared ({why}).", reasons
    unsure = [c for c in compared if c.verdict == "inconclusive"]
    if unsure:
        c = max(unsure, key=_nearest)
        return "inconclusive", _with_skipped(_sentence("inconclusive", c, level), skipped), reasons
    errors_open = [row for row in doc["errors"] if not row["not_worse"]]
    c = max(compared, key=_nearest)
    if errors_open:
        row = errors_open[0]
        return "inconclusive", _with_skipped(
            f"Inconclusive: latency shows no regression ({_ratio_clause(c, level)}), but the {row['population']} "
            f"{row['text']}.", skipped), reasons
    return "no_regression", _with_skipped(_sentence("no_regression", c, level), skipped), reasons


def _nearest(c: Comparison) -> float:
    """How close a comparison's upper bound comes to its own threshold (the verdict quotes the closest)."""
    return float(np.nan_to_num(c.ratio.high, nan=np.inf)) / c.threshold


def _with_skipped(sentence: str, skipped: list[Comparison]) -> str:
    if not skipped:
        return sentence
    names = ", ".join(f"{c.population.name} P{c.ratio.percentile:g}" for c in skipped)
    return f"{sentence[:-1]}; not compared (too few answers): {names}."


def _ratio_clause(c: Comparison, level: str) -> str:
    r = c.ratio
    return (f"candidate/baseline P{r.percentile:g} of {c.population.name}'s answered requests over the night is "
            f"{ratio_text(r.ratio)} ({level} {ratio_text(r.low)} to {ratio_text(r.high)})")


def _sentence(verdict: str, c: Comparison, level: str) -> str:
    ratio, threshold = _ratio_clause(c, level), c.threshold
    e = c.errors
    if verdict == "regression" and e.worse:
        return (f"Regression: the candidate failed {100 * e.candidate:.2f}% of the night's attempts "
                f"against {100 * e.baseline:.2f}% for the baseline (difference interval {100 * e.low:+.2f} to "
                f"{100 * e.high:+.2f} percentage points).")
    if verdict == "regression":
        return f"Regression: {ratio}, above 1 and at or beyond the x{threshold:g} threshold."
    if verdict == "inconclusive":
        return (f"Inconclusive: {ratio}, which straddles the x{threshold:g} threshold; the smallest change this "
                f"run could detect is {mde_text(c.ratio)}.")
    return (f"No regression: {ratio}, below the x{threshold:g} threshold; failure shares shown not worse by more "
            f"than {100 * e.margin:.2f} percentage points.")
