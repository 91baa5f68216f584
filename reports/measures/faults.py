"""How much each fault hurt and how long it took to heal.

Recovery is measured in fixed bins after the fault ends, and it must be sustained: the service
has recovered at the start of the first stretch of `window_s` seconds in which every bin that
holds requests is back within the run's SLOs (latency judged as the SLO is, a good-events ratio:
enough attempts succeeded within the threshold) and which holds at least `min_requests`
requests. One good request after a fault proves nothing; at a rate too low to put that many
requests in any stretch the report says it cannot tell instead of declaring a recovery.
Both settings have defaults (DEFAULT_WINDOW_S, DEFAULT_MIN_REQUESTS) and can be set per chaos
entry (`recovery_window`, `recovery_min_requests`). Latencies cover every attempted request,
failures at the moment they ended (rushhour.reports.rundata.attempts).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from rushhour.kernel.clock import parse_duration
from rushhour.reports.estimate.intervals import percentile_of
from rushhour.reports.rundata.attempts import attempt_values, attempted, good
from rushhour.reports.schema import SloSpec

RECOVERY_BIN_S = 1.0
DEFAULT_WINDOW_S = 5.0
DEFAULT_MIN_REQUESTS = 20
SHED_STATUSES = (429, 503)


@dataclass(frozen=True)
class FaultWindow:
    """One fault from its fault_start/fault_end events (end = run end if it never stopped)."""

    name: str
    experiment: str
    start_s: float
    end_s: float
    ended: bool


def fault_windows(events: list[dict[str, Any]], duration_s: float) -> list[FaultWindow]:
    """Pair fault_start and fault_end events by name, in start order."""
    open_faults: dict[str, dict[str, Any]] = {}
    windows = []
    for event in events:
        name = str(event.get("name", "fault"))
        if event["type"] == "fault_start":
            open_faults[name] = event
        elif event["type"] == "fault_end" and name in open_faults:
            start = open_faults.pop(name)
            windows.append(FaultWindow(name, str(start.get("experiment", "")),
                                       float(start["t_s"]), float(event["t_s"]), True))
    windows += [FaultWindow(name, str(e.get("experiment", "")), float(e["t_s"]), duration_s, False)
                for name, e in open_faults.items()]
    return sorted(windows, key=lambda window: window.start_s)


@dataclass(frozen=True)
class RecoveryLimits:
    """What "back within SLO" means: a latency percentile bound and a maximum error rate."""

    percentile: float | None = None
    threshold_ms: float | None = None
    max_error_rate: float | None = None
    window_s: float = DEFAULT_WINDOW_S
    min_requests: int = DEFAULT_MIN_REQUESTS

    @classmethod
    def from_slos(cls, specs: list[SloSpec]) -> RecoveryLimits:
        """Take the first unfiltered latency and availability SLOs (any, if none is unfiltered)."""
        latency = _first(specs, "latency")
        availability = _first(specs, "availability")
        return cls(
            percentile=latency.percentile if latency else None,
            threshold_ms=latency.threshold_ms if latency else None,
            max_error_rate=1 - float(availability.objective or 0) if availability else None,
        )

    @property
    def defined(self) -> bool:
        return self.threshold_ms is not None or self.max_error_rate is not None

    def rule(self) -> dict[str, Any]:
        """The sustained-recovery rule as the report states it."""
        return {"window_s": self.window_s, "min_requests": self.min_requests}


def limits_for(limits: RecoveryLimits, window: FaultWindow, chaos: list[Any], time_scale: float) -> RecoveryLimits:
    """`limits` with the chaos entry's own `recovery_window` (scenario clock) and
    `recovery_min_requests`, for the entry that injected `window`'s fault."""
    stem = window.experiment.rsplit("/", 1)[-1].split(".")[0]
    for entry in chaos:
        if not isinstance(entry, dict):
            continue
        entry_stem = str(entry.get("experiment", "")).rsplit("/", 1)[-1].split(".")[0]
        if window.name not in (entry.get("name"), entry_stem) and stem != entry_stem:
            continue
        changes: dict[str, Any] = {}
        if entry.get("recovery_window") is not None:
            changes["window_s"] = parse_duration(str(entry["recovery_window"])) / time_scale
        if entry.get("recovery_min_requests") is not None:
            changes["min_requests"] = int(entry["recovery_min_requests"])
        return replace(limits, **changes)
    return limits


def _first(specs: list[SloSpec], kind: str) -> SloSpec | None:
    matching = [spec for spec in specs if spec.kind == kind]
    plain = [spec for spec in matching if spec.priority is None and spec.mode is None and spec.phase is None and spec.request_kind is None]
    return (plain or matching)[0] if matching else None


def fault_impact(requests: pd.DataFrame, window: FaultWindow, limits: RecoveryLimits,
                 duration_s: float, journal: dict[str, Any] | None) -> dict[str, Any]:
    """The fault table row: requests hurt, worst P99 during, recovery time, steady state."""
    intended = requests["intended_s"].to_numpy()
    inside = (intended >= window.start_s) & (intended < window.end_s)
    ok = requests["ok"].to_numpy()
    shed = np.isin(requests["status"].to_numpy(), SHED_STATUSES)
    latency = attempt_values(requests)
    p99 = percentile_of(latency[inside], 99.0)
    p99_ok = percentile_of(latency[inside & ok], 99.0)
    recovery, unclear = recovery_time(requests, window.end_s, limits, duration_s)
    return {
        "name": window.name, "experiment": window.experiment, "start_s": window.start_s,
        "end_s": window.end_s, "ended": window.ended, "requests": int(inside.sum()),
        "failed_requests": int((inside & ~ok).sum()), "shed_requests": int((inside & shed).sum()),
        "p99_during_ms": p99.value, "p99_during_samples": p99.samples,
        "p99_during_trusted": p99.trusted, "p99_during_ok_only_ms": p99_ok.value,
        "recovery_s": recovery, "recovered": recovery is not None,
        "recovery_rule": limits.rule(), "recovery_unclear": unclear,
        "steady_state": steady_state(journal),
    }


def recovery_time(requests: pd.DataFrame, end_s: float, limits: RecoveryLimits,
                  duration_s: float, bin_s: float = RECOVERY_BIN_S) -> tuple[float | None, str | None]:
    """(seconds from fault end to the start of the first sustained healthy stretch, or None;
    why it cannot be told, or None): see the module doc."""
    if not limits.defined:
        return None, "the scenario has no latency or availability SLO to judge recovery by"
    n_bins = max(1, int(np.ceil((duration_s - end_s) / bin_s)))
    offset = requests["intended_s"].to_numpy() - end_s
    groups = np.floor(offset / bin_s)
    groups = np.where((groups >= 0) & (groups < n_bins), groups, -1).astype(np.int64)
    counts = np.bincount(groups[groups >= 0], minlength=n_bins)
    healthy = np.ones(n_bins, dtype=bool)
    if limits.max_error_rate is not None:
        failed = ~requests["ok"].to_numpy() & (groups >= 0)
        errors = np.bincount(groups[failed], minlength=n_bins)
        healthy &= errors <= limits.max_error_rate * counts
    if limits.threshold_ms is not None:
        tried = attempted(requests) & (groups >= 0)
        fine = tried & good(requests, limits.threshold_ms)
        n_tried = np.bincount(groups[tried], minlength=n_bins)
        needed = np.ceil(np.round(float(limits.percentile or 99) / 100.0 * n_tried, 9))
        healthy &= np.bincount(groups[fine], minlength=n_bins) >= needed
    return _sustained(counts, healthy, limits, bin_s)


def _sustained(counts: np.ndarray, healthy: np.ndarray, limits: RecoveryLimits,
               bin_s: float) -> tuple[float | None, str | None]:
    """The first bin that starts a healthy stretch of `limits.window_s` with enough requests."""
    width = max(1, int(round(limits.window_s / bin_s)))
    if counts.size < width:
        return None, f"the run ended less than {limits.window_s:g} s after the fault, too soon to tell"
    sums = np.convolve(counts, np.ones(width, dtype=np.int64), mode="valid")
    sick = np.convolve((~healthy & (counts > 0)).astype(np.int64), np.ones(width, dtype=np.int64), mode="valid")
    starts = (sums >= limits.min_requests) & (sick == 0) & (counts[: sums.size] > 0)
    if starts.any():
        return float(np.flatnonzero(starts)[0] * bin_s), None
    if sums.max() < limits.min_requests:
        return None, (f"the rate after the fault was too low to tell: no {limits.window_s:g} s stretch held "
                      f"{limits.min_requests} requests (at most {int(sums.max())})")
    return None, None


def steady_state(journal: dict[str, Any] | None) -> dict[str, Any] | None:
    """The chaos journal's status and steady-state hypothesis outcome, before and after."""
    if journal is None:
        return None
    states = journal.get("steady_states") or {}
    return {
        "status": journal.get("status"),
        "deviated": bool(journal.get("deviated", False)),
        "before_met": (states.get("before") or {}).get("steady_state_met"),
        "after_met": (states.get("after") or {}).get("steady_state_met"),
    }


def journal_for(window: FaultWindow, journals: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The journal of one fault: by file name, else by the experiment's title or path stem."""
    if window.name in journals:
        return journals[window.name]
    stem = window.experiment.rsplit("/", 1)[-1].split(".")[0]
    for name, journal in journals.items():
        title = (journal.get("experiment") or {}).get("title")
        if name == stem or (title and title == window.experiment):
            return journal
    return None
