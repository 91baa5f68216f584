"""One step of a capacity search judged: every SLO met, missed or not yet clear, at 95% confidence.

A step's requests are judged while some are still in flight, so each request is good, bad or
*pending*. A pending request that has already waited longer than a latency threshold is bad
whatever comes back; any other pending request could still go either way. An SLO is

- **met** when it holds even if every pending request turns out bad: the percentile's one-sided
  95% upper bound (binomial order statistics, `reports.stats.ci_ranks`) is within the threshold,
  or a share's one-sided 95% Clopper-Pearson bound is on the right side of the objective;
- **missed** when it fails even if every pending request turns out good (the lower bound is past
  the threshold);
- **open** otherwise. That is the early-stopping rule (MLPerf LoadGen's idea): a step ends as
  soon as its verdict is clear, and a step that ends open counts as not met.

TTFT, TPOT and ITL objectives (streaming targets) are judged like latency over their own column,
with one difference: a request still in flight may already have had its first token in time,
so however long it has waited it stays pending, never bad, until its answer is recorded.
Goodput is a rate, not a per-request objective: `step_figures` reports each step's goodput (the
offered rate times the share of answered requests that met every judged per-request objective),
and no step is judged on it.

Every SLO is judged over the whole step; a `phase` filter has no meaning at a constant rate.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.stats import beta

from reports.faults import SHED_STATUSES
from reports.goodput import per_request_good
from reports.schema import LATENCY_KINDS, SloSpec
from reports.selection import slo_scope
from reports.stats import ci_ranks, summary_percentiles

__all__ = ["ONE_SIDED", "SloCall", "judge_slos", "samples_to_pass", "step_figures"]

ONE_SIDED = 0.95
INTERVAL = 2 * ONE_SIDED - 1  # a two-sided interval whose each end is a one-sided ONE_SIDED bound
Decision = Literal["met", "missed", "open"]
SETTLE_S = 5.0


@dataclass(frozen=True)
class SloCall:
    """One SLO over one step: the decision, the evidence, and how many samples a pass needs."""

    name: str
    kind: str
    objective_text: str
    decision: Decision
    samples: int
    bad: int
    pending: int
    measured: float | None
    lower: float | None
    upper: float | None
    needed: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def samples_to_pass(spec: SloSpec) -> int:
    """Fewest requests in scope with which `spec` can be shown met (none of them bad)."""
    allowed = spec.allowed_bad_share
    return math.ceil(math.log(1.0 - ONE_SIDED) / math.log(1.0 - allowed) - 1e-9)


def judge_slos(requests: pd.DataFrame, specs: list[SloSpec], now_s: float, *, final: bool = True,
               record_lag_s: float = 0.0) -> list[SloCall]:
    """Judge every SLO on the step's requests at `now_s` (seconds on the step's clock).

    `requests` holds one row per request intended inside the measurement window, with NaN
    `done_s` for those still in flight; an answer may take `record_lag_s` to be recorded. Before
    the step's end (`final` False) only requests due at least SETTLE_S ago (or one latency
    threshold, if shorter) are judged: nearly all of them are answered, so the few still in
    flight, counted against a pass and for a failure, rarely hold a clear verdict up.
    """
    known_at = now_s - record_lag_s
    return [_judge(requests, spec.model_copy(update={"phase": None}), known_at, final) for spec in specs]


def _judge(requests: pd.DataFrame, spec: SloSpec, now_s: float, final: bool) -> SloCall:
    scope = slo_scope(requests, pd.Series("", index=requests.index), spec)
    if not final:
        horizon = min(float(spec.threshold_ms or 0) / 1000.0, SETTLE_S) if spec.kind in LATENCY_KINDS else SETTLE_S
        scope &= requests["intended_s"].to_numpy(dtype=float) < now_s - horizon
    frame = requests[scope]
    pending = frame["done_s"].isna().to_numpy()
    ok = frame["ok"].to_numpy(dtype=bool) & ~pending
    if spec.kind in LATENCY_KINDS:
        return _latency(spec, frame, ok, pending, now_s)
    if spec.kind == "availability":
        good, unknown, n = int(ok.sum()), int(pending.sum()), len(frame)
        low = _cp_low(good, n)
        high = _cp_high(good + unknown, n)
        objective = float(spec.objective or 0)
        decision = _decide(low is not None and low > objective, high is not None and high < objective)
        return _call(spec, decision, n, n - good - unknown, unknown, good / n if n else None, low, high)
    degraded = frame["degraded"].to_numpy(dtype=bool) & ok
    n, bad = int(ok.sum()), int(degraded.sum())
    low, high = _cp_low(bad, n), _cp_high(bad, n)
    limit = float(spec.max_share or 0)
    decision = _decide(high is not None and high <= limit, low is not None and low > limit)
    return _call(spec, decision, n, bad, int(pending.sum()), bad / n if n else None, low, high)


def _latency(spec: SloSpec, frame: pd.DataFrame, ok: np.ndarray, pending: np.ndarray, now_s: float) -> SloCall:
    """A per-request time objective over `spec.column`; for end-to-end latency a request in flight
    longer than the threshold is already bad, for TTFT/TPOT/ITL it stays pending (module doc)."""
    threshold = float(spec.threshold_ms or 0)
    column = spec.column
    latency = frame[column].to_numpy(dtype=float) if column in frame else np.full(len(frame), np.nan)
    waited = (now_s - frame["intended_s"].to_numpy(dtype=float)) * 1000.0
    good = ok & (latency <= threshold)
    unknown = pending & (waited <= threshold) if spec.kind == "latency" else pending.copy()
    n = len(frame)
    pessimistic = np.sort(np.where(good, latency, np.inf))
    optimistic = np.sort(np.where(good, latency, np.where(unknown, waited, np.inf)))
    lo, hi = ci_ranks(float(spec.percentile or 0), n, INTERVAL) if n else (0, 1)
    met = 1 <= hi <= n and int(good.sum()) >= hi
    missed = lo >= 1 and int(good.sum() + unknown.sum()) < lo
    upper = _finite(pessimistic[hi - 1]) if 1 <= hi <= n else None
    lower = _finite(optimistic[lo - 1]) if 1 <= lo <= n else None
    rank = min(n, max(1, math.ceil(round(float(spec.percentile or 0) / 100.0 * n, 9))))
    point = _finite(optimistic[rank - 1]) if n else None
    return _call(spec, _decide(met, missed), n, n - int(good.sum()) - int(unknown.sum()), int(unknown.sum()),
                 point, lower, upper)


def _decide(met: bool, missed: bool) -> Decision:
    return "met" if met else "missed" if missed else "open"


def _call(spec: SloSpec, decision: Decision, n: int, bad: int, pending: int, measured: float | None,
          lower: float | None, upper: float | None) -> SloCall:
    return SloCall(spec.name, spec.kind, spec.objective_text, decision, n, bad, pending, measured, lower, upper,
                   samples_to_pass(spec))


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _cp_low(hits: int, n: int) -> float | None:
    """One-sided lower Clopper-Pearson bound of hits/n."""
    if n == 0:
        return None
    return float(beta.ppf(1.0 - ONE_SIDED, hits, n - hits + 1)) if hits > 0 else 0.0


def _cp_high(hits: int, n: int) -> float | None:
    """One-sided upper Clopper-Pearson bound of hits/n."""
    if n == 0:
        return None
    return float(beta.ppf(ONE_SIDED, hits + 1, n - hits)) if hits < n else 1.0


def step_figures(requests: pd.DataFrame, *, window: tuple[float, float], completions: np.ndarray,
                 specs: list[SloSpec] | None = None) -> dict[str, object]:
    """Offered and achieved rate, percentiles with 95% intervals, error and shed rates of a step;
    goodput over `specs`' per-request objectives, and TTFT/TPOT percentiles when answers streamed.

    `requests` are those intended in `window`; `completions` the end times (step clock) of every
    successful answer of the step, whenever it was sent, so achieved is the rate the service
    delivered inside the window.
    """
    start, end = window
    span = max(end - start, 1e-9)
    done = requests["done_s"].to_numpy(dtype=float)
    finished = ~np.isnan(done)
    status = requests["status"].to_numpy()
    ok = requests["ok"].to_numpy(dtype=bool) & finished
    latency = np.where(finished, requests["latency_ms"].to_numpy(dtype=float), np.nan)
    served = int(((completions >= start) & (completions < end)).sum())
    n = len(requests)
    return {
        "requests": n, "finished": int(finished.sum()), "ok": int(ok.sum()),
        "offered_rps": n / span, "achieved_rps": served / span,
        "latency_ms": {key: p.as_dict() for key, p in summary_percentiles(latency).items() if key != "p999"},
        "error_rate": float((finished & ~ok).sum() / n) if n else None,
        "shed_rate": float((finished & np.isin(status, list(SHED_STATUSES))).sum() / n) if n else None,
        "goodput_rps": _goodput(requests, finished, specs or [], span),
        **_stream_percentiles(requests, finished),
    }


def _goodput(requests: pd.DataFrame, finished: np.ndarray, specs: list[SloSpec], span: float) -> float | None:
    """The offered rate times the share of finished requests that succeeded and met every
    per-request objective in scope: requests still in flight at a mid-step look would otherwise
    count as not good, and a step judged early would understate its goodput."""
    if not finished.any():
        return None
    good = per_request_good(requests, pd.Series("", index=requests.index),
                            [spec.model_copy(update={"phase": None}) for spec in specs])
    return len(requests) / span * float((good & finished).sum()) / float(finished.sum())


def _stream_percentiles(requests: pd.DataFrame, finished: np.ndarray) -> dict[str, object]:
    """ttft_ms and tpot_ms percentiles of a step whose answers streamed (nothing otherwise)."""
    out: dict[str, object] = {}
    for column in ("ttft_ms", "tpot_ms"):
        values = requests[column].to_numpy(dtype=float) if column in requests else np.empty(0)
        values = np.where(finished, values, np.nan) if len(values) else values
        if len(values) and np.isfinite(values).any():
            out[column] = {key: p.as_dict() for key, p in summary_percentiles(values).items() if key != "p999"}
    return out
