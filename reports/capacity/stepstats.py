"""One step of a capacity search judged at one of its planned looks: every SLO met, missed or open.

A step's requests are judged while some are still in flight, so each request is good, bad or
*pending*. A pending request that has already waited longer than a latency threshold is bad
whatever comes back; any other pending request could still go either way. Every SLO is a share
of bad requests against what it allows (a P99 allows 1% past its threshold), and at look k of K
(`rushhour.reports.estimate.sequential`) it is

- **met** when it holds even if every pending request turns out bad: the bad share's one-sided
  upper bound, at the look's nominal level and over the effective sample size, is within the
  allowed share;
- **missed** when it fails even if every pending request turns out good (the lower bound is past
  it);
- **open** otherwise; a step that ends open counts as not met.

The nominal levels come from an O'Brien-Fleming error-spending design, so over all K looks each
wrong call ("missed" when the truth is met, "met" when it is missed) has at most a 5% chance;
the effective sample size discounts latencies that queueing makes correlated (batch means). A
search whose figure must pass two windows may give "met" a larger error per window (`met_error`,
`rushhour.reports.estimate.sequential.paired_error`); "missed" keeps 5%.

Each call says what it rests on: `effective_samples` (the requests in scope over the design
effect, the independent requests they count as) and `method`, a sentence naming the bound, the
look and, when the step held too few independent requests for a pass, how many it needs; both go
into capacity.json beside the call.

TTFT, TPOT and ITL objectives (streaming targets) are judged like latency over their own column,
with one difference: a request still in flight may already have had its first token in time,
so however long it has waited it stays pending, never bad, until its answer is recorded.
Goodput is a rate, not a per-request objective: `step_figures` reports each step's goodput (good
requests per second of the window, a request unanswered at the look counted as not good), and
no step is judged on it.

Every SLO is judged over the whole step; a `phase` filter has no meaning at a constant rate.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd

from rushhour.reports.estimate.intervals import ci_ranks, summary_percentiles
from rushhour.reports.estimate.sequential import ALPHA, LOOKS, PILOT_FLOOR, look_call, nominal_levels, share_calls
from rushhour.reports.measures.faults import SHED_STATUSES
from rushhour.reports.measures.goodput import per_request_good
from rushhour.reports.rundata.selection import slo_scope
from rushhour.reports.schema import LATENCY_KINDS, SloSpec

__all__ = ["ONE_SIDED", "SloCall", "judge_slos", "reachable", "samples_to_pass", "samples_to_show", "step_figures"]

ONE_SIDED = 1.0 - ALPHA
Decision = Literal["met", "missed", "open"]


@dataclass(frozen=True)
class SloCall:
    """One SLO at one look: the decision, the evidence, and how many samples a pass needs.

    `lower`/`upper` bound the measured figure (ms for time objectives, a share otherwise) at the
    look's nominal levels: the bound a "missed" needs at `level`, the one a "met" needs at
    `met_level`; `design_effect` is how many requests counted as one independent one, and
    `met_error` the error "met" spends over the step's looks.
    """

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
    look: int = LOOKS
    level: float = ALPHA
    design_effect: float = 1.0
    met_level: float = ALPHA
    met_error: float = ALPHA

    @property
    def effective_samples(self) -> int:
        """How many independent requests the step's requests count as: samples / design effect."""
        return int(self.samples / max(self.design_effect, 1.0))

    @property
    def method(self) -> str:
        """The method and effective sample size behind the decision, in plain words."""
        if not self.samples:
            return "no request in scope, so nothing could be shown"
        clustered = (f"neighbouring requests share the queue, so they count as {self.effective_samples:,} "
                     f"independent ones (design effect {self.design_effect:g}, from batch means over the window)"
                     if self.design_effect > 1.0 else "no clustering seen, so each request counts as one")
        enough = ("" if self.effective_samples >= self.needed else
                  f"; not enough independent data to show it met: {self.effective_samples:,} effective requests, "
                  f"at least {self.needed:,} needed")
        return (f"exact binomial (Clopper-Pearson) bound on the share past the objective over {self.samples:,} "
                f"requests at planned look {self.look}; {clustered}{enough}")

    def as_dict(self) -> dict[str, object]:
        return asdict(self) | {"effective_samples": self.effective_samples, "method": self.method}


def samples_to_pass(spec: SloSpec, looks: int = LOOKS, met_error: float = ALPHA) -> int:
    """Fewest requests in scope with which `spec` can be shown met at the final look (none bad)."""
    return samples_to_show(spec.allowed_bad_share, looks, met_error)


def samples_to_show(allowed: float, looks: int = LOOKS, met_error: float = ALPHA) -> int:
    """Fewest independent requests, none bad, that show a bad share of at most `allowed` at the
    final look of `looks` with "met" spending `met_error`."""
    level = float(nominal_levels(looks, met_error)[-1])
    return math.ceil(math.log(level) / math.log(1.0 - allowed) - 1e-9)


def reachable(call: SloCall, allowed: float, remaining: int, looks: int = LOOKS, met_error: float = ALPHA) -> bool:
    """Whether `call`'s SLO can still be shown met at the final look of `looks`.

    The best a pass can hope for: each of the `remaining` requests still due in the SLO's scope
    turns out good, and the requests are independent (a design effect of 1; a larger one only
    widens the bound). When even then the bad share's upper bound stays past `allowed`, the final
    look cannot call the SLO met, whatever the rest of the step brings.
    """
    level = float(nominal_levels(looks, met_error)[-1])
    bad = np.array([call.bad])
    met, _, _, _ = share_calls(bad, bad, call.samples + remaining, allowed, np.ones(1), level)
    return bool(np.asarray(met).reshape(-1)[0])


def judge_slos(requests: pd.DataFrame, specs: list[SloSpec], now_s: float, *, look: int = LOOKS,
               looks: int = LOOKS, record_lag_s: float = 0.0, met_error: float = ALPHA) -> list[SloCall]:
    """Judge every SLO on the requests of look `look` of `looks` at `now_s` (step clock).

    `requests` holds one row per request the look covers, with NaN `done_s` for those still in
    flight; an answer may take `record_lag_s` to be recorded. "Met" spends `met_error` over the
    looks ("missed" always ALPHA).
    """
    known_at = now_s - record_lag_s
    return [_judge(requests, spec.model_copy(update={"phase": None}), known_at, _Look(look, looks, met_error))
            for spec in specs]


@dataclass(frozen=True)
class _Look:
    """Which look of how many, and the error "met" spends over them."""

    number: int
    looks: int
    met_error: float

    @property
    def level(self) -> float:
        return float(nominal_levels(self.looks)[self.number - 1])

    @property
    def met_level(self) -> float:
        return float(nominal_levels(self.looks, self.met_error)[self.number - 1])


def _judge(requests: pd.DataFrame, spec: SloSpec, now_s: float, look: _Look) -> SloCall:
    frame = requests[slo_scope(requests, pd.Series("", index=requests.index), spec)]
    frame = frame.sort_values("intended_s", kind="stable")
    pending = frame["done_s"].isna().to_numpy()
    ok = frame["ok"].to_numpy(dtype=bool) & ~pending
    if spec.kind in LATENCY_KINDS:
        return _latency(spec, frame, ok, pending, now_s, look)
    if spec.kind == "availability":
        bad_sure = ~ok & ~pending
        good_share = None if not len(frame) else float(ok.sum()) / len(frame)
        return _share(spec, bad_sure, pending, 1.0 - float(spec.objective or 0), look, good_share, True)
    # the share is of successful answers; a pending request may still become a degraded one,
    # so "met" must hold with every pending request degraded (and "missed" with none)
    rows = ok | pending
    degraded = frame["degraded"].to_numpy(dtype=bool)
    share = float(degraded[ok].mean()) if ok.any() else None
    return _share(spec, (degraded & ok)[rows], pending[rows], float(spec.max_share or 0), look, share, False)


def _share(spec: SloSpec, bad_sure: np.ndarray, unknown: np.ndarray, allowed: float, look: _Look,
           measured: float | None, as_good: bool) -> SloCall:
    """A share objective: `bad_sure` rows count against it, `unknown` rows may go either way."""
    n = len(bad_sure)
    call = look_call(bad_sure, unknown, allowed, look=look.number, looks=look.looks, met_error=look.met_error) if n else None
    met, missed = (bool(call.met[0]), bool(call.missed[0])) if call else (False, False)
    low, up = (float(call.lower[0]), float(call.upper[0])) if call else (0.0, 1.0)
    effect = float(call.effect[0]) if call else 1.0
    lower, upper = (1.0 - float(up), 1.0 - float(low)) if as_good else (float(low), float(up))
    return _call(spec, _decide(met, missed), n, int(bad_sure.sum()), int(unknown.sum()), measured,
                 lower if n else None, upper if n else None, look, effect)


def _latency(spec: SloSpec, frame: pd.DataFrame, ok: np.ndarray, pending: np.ndarray, now_s: float,
             look: _Look) -> SloCall:
    """A per-request time objective over `spec.column`; for end-to-end latency a request in flight
    longer than the threshold is already bad, for TTFT/TPOT/ITL it stays pending (module doc)."""
    threshold = float(spec.threshold_ms or 0)
    column = spec.column
    latency = frame[column].to_numpy(dtype=float) if column in frame else np.full(len(frame), np.nan)
    waited = (now_s - frame["intended_s"].to_numpy(dtype=float)) * 1000.0
    good = ok & (latency <= threshold)
    unknown = pending & (waited <= threshold) if spec.kind == "latency" else pending.copy()
    n = len(frame)
    bad_sure = ~good & ~unknown
    score = np.where(ok, latency, np.where(unknown, np.nan, np.inf))
    call = look_call(bad_sure, unknown, spec.allowed_bad_share, look=look.number, looks=look.looks, score=score,
                     floor=PILOT_FLOOR * threshold, met_error=look.met_error) if n else None
    met, missed = (bool(call.met[0]), bool(call.missed[0])) if call else (False, False)
    effect = float(call.effect[0]) if call else 1.0
    pessimistic = np.sort(np.where(good, latency, np.inf))
    optimistic = np.sort(np.where(good, latency, np.where(unknown, waited, np.inf)))
    n_eff = max(1, int(n / effect))
    percentile = float(spec.percentile or 0)
    lo, hi = (ci_ranks(percentile, n_eff, 1.0 - 2.0 * look.level)[0],
              ci_ranks(percentile, n_eff, 1.0 - 2.0 * look.met_level)[1]) if n else (0, 1)
    lo, hi = (min(n, math.ceil(lo * n / n_eff)), min(n + 1, math.ceil(hi * n / n_eff))) if n else (lo, hi)
    upper = _finite(pessimistic[hi - 1]) if 1 <= hi <= n else None
    lower = _finite(optimistic[lo - 1]) if 1 <= lo <= n else None
    rank = min(n, max(1, math.ceil(round(float(spec.percentile or 0) / 100.0 * n, 9))))
    point = _finite(optimistic[rank - 1]) if n else None
    return _call(spec, _decide(met, missed), n, int(bad_sure.sum()), int(unknown.sum()), point, lower, upper,
                 look, effect)


def _decide(met: bool, missed: bool) -> Decision:
    return "met" if met else "missed" if missed else "open"


def _call(spec: SloSpec, decision: Decision, n: int, bad: int, pending: int, measured: float | None,
          lower: float | None, upper: float | None, look: _Look, effect: float) -> SloCall:
    return SloCall(spec.name, spec.kind, spec.objective_text, decision, n, bad, pending, measured, lower, upper,
                   samples_to_pass(spec, look.looks, look.met_error), look.number, look.level, round(effect, 3),
                   look.met_level, look.met_error)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


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
    """Good requests per second of the window: a request that succeeded and met every
    per-request objective in scope; one still unanswered (a hung request) is not good."""
    if not len(requests):
        return None
    good = per_request_good(requests, pd.Series("", index=requests.index),
                            [spec.model_copy(update={"phase": None}) for spec in specs])
    return float((good & finished).sum()) / span


def _stream_percentiles(requests: pd.DataFrame, finished: np.ndarray) -> dict[str, object]:
    """ttft_ms and tpot_ms percentiles of a step whose answers streamed (nothing otherwise)."""
    out: dict[str, object] = {}
    for column in ("ttft_ms", "tpot_ms"):
        values = requests[column].to_numpy(dtype=float) if column in requests else np.empty(0)
        succeeded = finished & requests["ok"].to_numpy(dtype=bool)
        values = np.where(succeeded, values, np.nan) if len(values) else values
        if len(values) and np.isfinite(values).any():
            out[column] = {key: p.as_dict() for key, p in summary_percentiles(values).items() if key != "p999"}
    return out
