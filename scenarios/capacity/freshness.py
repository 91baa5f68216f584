"""Whether a cached capacity still holds on this machine now, and a search that ran into its ceiling.

A cached figure was measured once, under the load the machine had then; on a shared machine the
same server can carry half as much an hour later. Before a drill uses a cached figure, one short
step at that rate checks it: the figure is refused only when the step shows an SLO *missed*
(with the step's sequential 95% confidence) or the service falling behind, never merely because
a short step could not show every SLO met. A search whose every rate passed found a lower bound,
not a capacity: it is searched again above it (`widened`), a few times at most.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rushhour.scenarios.capacity.job import CapacityJob, step_rules
from rushhour.scenarios.capacity.search import GENERATOR, SearchSettings, StepVerdict
from rushhour.scenarios.capacity.steps import THROUGHPUT

__all__ = ["CHECK_STEP_S", "CheckResult", "RunFn", "age_text", "check_job", "checked", "load_average", "widened"]

CHECK_STEP_S = 20.0
WIDEN_SPAN = 4.0
RATE_EDGE = 1.0001

RunFn = Callable[[CapacityJob], dict[str, Any]]
"""Runs a capacity job and returns its capacity.json document (the real one boots the server)."""


@dataclass(frozen=True)
class CheckResult:
    """The check step at the cached rate: held (not shown missed) or missed, and why."""

    held: bool
    reason: str
    failure: StepVerdict | None = None
    """The check step as a failure a new search starts from (None when it held or did not run)."""


def load_average() -> float | None:
    """The machine's one-minute load average (None where the system has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def check_job(job: CapacityJob, rate_rps: float) -> CapacityJob:
    """`job` reduced to one step of CHECK_STEP_S at `rate_rps`, no confirmation, its own folder."""
    settings = SearchSettings(min_rps=rate_rps, max_rps=rate_rps * RATE_EDGE, precision=job.settings.precision,
                              max_steps=1, confirm=False)
    return dataclasses.replace(job, settings=settings, start_rps=rate_rps,
                               rules=step_rules(CHECK_STEP_S, job.scenario.load.max_lag_p99_ms),
                               out_dir=job.out_dir.with_name(job.out_dir.name + "-check"))


def checked(document: dict[str, Any]) -> CheckResult:
    """Read the check step out of its capacity.json document."""
    if document.get("aborted"):
        return CheckResult(False, f"the check could not run: {document['aborted']}")
    steps = document.get("steps") or []
    if not steps:
        return CheckResult(False, "the check ran no step")
    step = steps[0]
    missed = [call["name"] for call in step.get("slos") or [] if call.get("decision") == "missed"]
    if missed or step.get("limiting") == THROUGHPUT:
        reason = f"a {CHECK_STEP_S:g} s step at {step['offered_rps']:g} req/s missed {', '.join(missed) or 'its throughput'}"
        failure = StepVerdict(float(step["offered_rps"]), "fail", missed[0] if missed else THROUGHPUT, reason)
        return CheckResult(False, f"{reason}: {step.get('reason', '')}", failure)
    if step.get("verdict") == "invalid":
        reason = f"the check step was invalid: {step.get('reason', '')}"
        return CheckResult(False, reason, StepVerdict(float(step["offered_rps"]), "fail", GENERATOR, reason))
    shown = "every SLO met" if step.get("passed") else "no SLO shown missed"
    return CheckResult(True, f"a {CHECK_STEP_S:g} s step at {step['offered_rps']:g} req/s: {shown}")


def widened(job: CapacityJob, entry: dict[str, Any]) -> CapacityJob | None:
    """The same search above a ceiling it ran into (None when `entry` did not end at one)."""
    if not entry.get("ceiling") or entry.get("capacity_rps") is None:
        return None
    low = float(entry["capacity_rps"])
    settings = dataclasses.replace(job.settings, min_rps=low, max_rps=low * WIDEN_SPAN, growth=2.0)
    return dataclasses.replace(job, settings=settings, start_rps=low * 2.0, probe=False,
                               out_dir=job.out_dir.with_name(job.out_dir.name + "-wider"))


def age_text(measured_at: str | None, now: datetime | None = None) -> str:
    """How long ago an ISO time was, in words ("3 h 5 min"); "unknown age" when unreadable."""
    try:
        then = datetime.fromisoformat(str(measured_at))
    except ValueError:
        return "unknown age"
    seconds = max(0.0, ((now or datetime.now(UTC)) - then).total_seconds())
    days, rest = divmod(int(seconds), 86400)
    hours, minutes = rest // 3600, rest % 3600 // 60
    return f"{days} d {hours} h" if days else f"{hours} h {minutes} min" if hours else f"{minutes} min"
