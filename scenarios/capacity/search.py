"""The search itself: bracket upward from the lowest rate until a step fails, then bisect.

Pure and synchronous: it asks a `StepFn` for the verdict of one rate and decides which rate
comes next, so it is tested with a fake service in microseconds. Bisection is geometric (the
precision is relative), and the reported capacity is always a rate that *passed*: the highest
passing rate below the lowest failing one.

Before a capacity is reported it is confirmed: it needs a second passing step at that rate or
above it. Each step's wrong "met" has a chance of at most 5% (a calibration's 22.4%, so that
its two passes are wrong together at most 5%), and a search takes many steps, so the one figure
printed is checked twice; a confirmation that fails makes that rate a failure and
the search goes on below. The search already takes a service's latency as growing with its
arrival rate (it brackets and bisects on that), and under that order a pass at a higher rate is
as strong a second look as one at the rate itself: for the figure to be wrong, both passes must
be. So a capacity below a rate that passed and then failed its own confirmation is confirmed by
that pass, with no step more.

A search can start from a failure already seen (`SearchResult.after`: a cached capacity whose
check step just missed): that rate is its first failure from the start, so the search never
steps there again; it climbs by its growth while the next rate stays below that failure, and
bisects once it would not (or once a rate of its own failed).

A step that ended open (neither shown met nor missed: too little evidence either way) is, with
`retry_open`, stepped again at its rate before it counts as a failure, as long as the step
function offers a retry (`StepVerdict.retry_s`) and at most `MAX_RETRIES` times; the step
function sees the open step last in the result and gives the retry a longer window
(`rushhour capacity`: 120 s, longer where the open step's clustering asks for more), so a rate
just under the knee is judged on enough independent requests.

A step the load generator could not drive (invalid) ends the search by default: the answer is
then "at least the last pass". A calibration, whose drill runs on the same generator, asks for
`generator_limits` instead: such a rate is the highest this machine can offer, so it counts as a
failure limited by the generator and the search goes on below it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["MAX_RETRIES", "SearchResult", "SearchSettings", "StepVerdict", "search"]

Verdict = Literal["pass", "fail", "invalid"]
MAX_STEPS = 40
MAX_CONFIRMATIONS = 2
MAX_RETRIES = 3
"""Most retries of one open rate: each is a fresh chance of a wrong "met", so they are few."""
GENERATOR = "generator"
"""The `limiting` of a step the load generator could not drive (and of the failure it counts as,
with `generator_limits`)."""
MAX_GROWTH = 2.0


@dataclass(frozen=True)
class StepVerdict:
    """What one step at `rate_rps` concluded; `limiting` names the SLO or rule that failed it."""

    rate_rps: float
    verdict: Verdict
    limiting: str | None = None
    reason: str = ""
    open: bool = False
    """A failure that is no miss: an SLO neither shown met nor shown missed (too little evidence)."""
    evidence_s: float | None = None
    """For an open step: the seconds of window in which its rate brings as many independent requests
    as a pass needs with none bad, at the clustering the step measured (None: not known)."""
    retry_s: float | None = None
    """For an open step: the window of the retry the step function would step next at this rate
    (None: no retry; the search then counts the step a failure)."""


StepFn = Callable[[float], StepVerdict]


@dataclass(frozen=True, kw_only=True)
class SearchSettings:
    """The rates the search may try and when it is precise enough."""

    min_rps: float
    max_rps: float
    precision: float = 0.05
    growth: float = 2.0
    max_steps: int = MAX_STEPS
    confirm: bool = True
    accelerate_above: float | None = None
    """From a pass at or above this rate, each further pass squares the growth (1.1, 1.21, 1.46,
    then at most 2): a search planned from a throughput that read low climbs to the knee in a few
    steps instead of one precision at a time."""
    generator_limits: bool = False
    """Count a step the generator could not drive as a failure limited by the generator (and go
    on below it) instead of ending the search there."""
    retry_open: bool = False
    """Step again at a rate whose step ended open (`StepVerdict.open`) while the step function offers
    a retry (`StepVerdict.retry_s`), before counting it a failure: the step function sees the open
    step last in the result and gives the retry a longer window, so a rate near the knee is judged
    on enough independent requests."""

    def __post_init__(self) -> None:
        if not 0 < self.min_rps < self.max_rps:
            raise ValueError(f"The rates must satisfy 0 < min ({self.min_rps:g}) < max ({self.max_rps:g}).")
        if not 0 < self.precision < 1:
            raise ValueError(f"The precision {self.precision:g} must lie between 0 and 1.")
        if self.growth <= 1:
            raise ValueError(f"The bracketing growth factor {self.growth:g} must be above 1.")


@dataclass
class SearchResult:
    """The outcome: capacity (a passing rate, or None), the bracket, and every step in order."""

    steps: list[StepVerdict] = field(default_factory=list)
    last_pass: float | None = None
    first_fail: float | None = None
    generator_bound: bool = False
    limiting: str | None = None
    confirmed: bool | None = None
    """True when a second step at the capacity or above it passed too; None when no confirmation ran."""
    generator_limit: float | None = None
    """The lowest rate the generator could not drive, with `generator_limits` (None: none seen)."""
    known_fail: StepVerdict | None = None
    """The failure the search started from (`after`), not one of its own steps."""

    @classmethod
    def after(cls, failure: StepVerdict) -> SearchResult:
        """A search that starts knowing `failure`: its rate is the first failure until a lower one fails."""
        if failure.verdict != "fail":
            raise ValueError(f"A search can only start from a failure, not a {failure.verdict!r} step.")
        return cls(first_fail=failure.rate_rps, limiting=failure.limiting, known_fail=failure)

    @property
    def capacity_rps(self) -> float | None:
        return self.last_pass

    @property
    def ceiling(self) -> bool:
        """True when even the highest allowed rate passed: the capacity is at least that."""
        return self.first_fail is None and not self.generator_bound and self.last_pass is not None

    @property
    def below_min(self) -> bool:
        """True when every rate the search tried failed (a known failure alone is not a search)."""
        return self.last_pass is None and self.first_fail is not None and bool(self.steps)

    def narrow_enough(self, precision: float) -> bool:
        if self.last_pass is None or self.first_fail is None:
            return True
        return (self.first_fail - self.last_pass) / self.last_pass <= precision


def search(step: StepFn, settings: SearchSettings, *, start_rps: float | None = None,
           into: SearchResult | None = None) -> SearchResult:
    """Bracket from `start_rps` (default the minimum) by `growth`, then bisect to `precision`.

    A generator-bound (invalid) step ends the search: the answer is then "at least the last
    pass", never a capacity made up from a measurement of the generator. `into` is filled as the
    search goes, so an interrupted search still shows the steps it took.
    """
    result = into if into is not None else SearchResult()
    rate = min(max(start_rps or settings.min_rps, settings.min_rps), settings.max_rps)
    if result.first_fail is not None and rate >= result.first_fail:  # started from a known failure
        rate = max(result.first_fail / settings.growth, settings.min_rps)
    if not _bracket(step, settings, result, rate) and (result.generator_bound or result.last_pass is None):
        return result
    for attempt in range(MAX_CONFIRMATIONS + 1):
        if attempt < MAX_CONFIRMATIONS:
            _bisect(step, settings, result)
        if not settings.confirm or result.generator_bound or result.last_pass is None:
            break
        if _passed_twice(result):
            result.confirmed = True
            break
        if attempt == MAX_CONFIRMATIONS or _confirm(step, result, settings):
            break
        if result.last_pass is None and not _walk_below(step, settings, result):
            break
    return result


def _passed_twice(result: SearchResult) -> bool:
    """True when two steps at the capacity or above it passed: the figure is confirmed already."""
    assert result.last_pass is not None
    return sum(1 for s in result.steps if s.verdict == "pass" and s.rate_rps >= result.last_pass) >= 2


def _walk_below(step: StepFn, settings: SearchSettings, result: SearchResult) -> bool:
    """After the only pass failed its confirmation: walk down from below it until a rate passes
    (True) or the minimum fails too (False). A rate never tried is never called a miss."""
    assert result.first_fail is not None
    if result.first_fail <= settings.min_rps:
        return False
    return _bracket(step, settings, result, max(result.first_fail / settings.growth, settings.min_rps))


def _bisect(step: StepFn, settings: SearchSettings, result: SearchResult) -> None:
    while not result.narrow_enough(settings.precision) and len(result.steps) < settings.max_steps:
        assert result.last_pass is not None and result.first_fail is not None
        if not _take(step, math.sqrt(result.last_pass * result.first_fail), result, settings):
            break


def _confirm(step: StepFn, result: SearchResult, settings: SearchSettings) -> bool:
    """One more step at the capacity; True when the search is over (confirmed, or cannot go on).
    A failed confirmation makes that rate the first failure and the highest pass below it (if
    any) the new candidate."""
    rate = result.last_pass
    assert rate is not None
    if not _take(step, rate, result, settings):
        return True
    if result.steps[-1].verdict == "pass":
        result.confirmed = True
        return True
    result.confirmed = False
    result.first_fail = rate
    below = [s.rate_rps for s in result.steps if s.verdict == "pass" and s.rate_rps < rate]
    result.last_pass = max(below, default=None)
    return False


def _bracket(step: StepFn, settings: SearchSettings, result: SearchResult, rate: float) -> bool:
    """Walk up until a failure (True), or stop at the ceiling, below the minimum or when invalid."""
    growth = settings.growth
    while len(result.steps) < settings.max_steps:
        if not _take(step, rate, result, settings):
            return False
        if result.first_fail is not None:
            if result.last_pass is None and rate > settings.min_rps:
                rate = max(rate / settings.growth, settings.min_rps)  # started high: walk down
                continue
            if not _only_the_known_failure(result) or result.steps[-1].verdict != "pass":
                return result.last_pass is not None
        if rate >= settings.max_rps:
            return False
        if settings.accelerate_above is not None and rate >= settings.accelerate_above:
            growth = min(growth * growth, MAX_GROWTH)
        rate = min(rate * growth, settings.max_rps)
        if result.first_fail is not None and rate >= result.first_fail:
            return True  # the climb reached the known failure: bisect below it
    return False


def _only_the_known_failure(result: SearchResult) -> bool:
    """True while the search's one failure is the one it started from: a known failure far above
    the first passes only bounds the climb (climbing by the growth reaches the knee in fewer steps
    than bisecting towards a rate that may lie twice as high)."""
    return result.known_fail is not None and result.first_fail == result.known_fail.rate_rps


def _take(step: StepFn, rate: float, result: SearchResult, settings: SearchSettings) -> bool:
    """Run one step and fold it in; False when the search cannot go on (generator-bound). An open
    failure is stepped again with `retry_open` while the step function offers a retry, each open
    one kept in the steps, not folded in."""
    verdict = step(rate)
    while (verdict.verdict == "fail" and verdict.open and settings.retry_open and verdict.retry_s is not None
           and len(result.steps) + 1 < settings.max_steps
           and sum(1 for s in result.steps if s.open and s.rate_rps == rate) < MAX_RETRIES):
        result.steps.append(verdict)
        verdict = step(rate)
    if verdict.verdict == "invalid" and settings.generator_limits:
        result.generator_limit = min(rate, result.generator_limit or rate)
        verdict = StepVerdict(rate, "fail", GENERATOR, verdict.reason)
    result.steps.append(verdict)
    if verdict.verdict == "invalid":
        result.generator_bound = True
        return False
    below_fail = result.first_fail is None or rate < result.first_fail
    if verdict.verdict == "pass" and rate == result.last_pass:
        return True
    if verdict.verdict == "pass":
        if below_fail and (result.last_pass is None or rate > result.last_pass):
            result.last_pass = rate
    elif below_fail:
        result.first_fail = rate
        result.limiting = verdict.limiting
    return True
