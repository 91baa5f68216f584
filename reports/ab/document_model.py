"""ab.json as one typed model: the settings, both arms, the trials, each comparison and the verdict.

`rushhour.reports.ab.document.ab_document` assembles the document from the run's `ab` event and
its requests; `rushhour.reports.ab.render.write_ab_files` validates it here before anything is
written, and `read_ab` parses a written file back. What readers act on is typed (the verdicts, the
ratios with their intervals, error shares, the threshold and confidence); the parts whose statistics
grow (the design, each comparison, the cache check, the rate basis) take further keys as they
come (`extra="allow"`). The generator's health is summary.json's own model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rushhour.reports.summary.model import GeneratorHealth

__all__ = ["AbDocument", "ArmCounts", "CacheShares", "ErrorRow", "ErrorTest", "GroupRow", "RateBasis",
           "TrialDesign", "TrialRow", "read_ab"]

GroupVerdict = Literal["no_regression", "regression", "inconclusive", "not_compared"]


class _Fixed(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class _Growing(BaseModel):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class TrialDesign(_Growing):
    """How the night was cut into trials, as the run's `ab` event recorded it."""

    trials: int | None = None
    """Trials in the night."""
    trial_s: float | None = None
    """Seconds per trial."""
    arms: list[str] = []
    """The arm of each trial, in order."""
    seed: int | None = None
    """The seed of the arm order and the schedule."""
    interleave: str | None = None
    """`requests` (both arms in each slice) or whole trials."""
    warmup_pairs: int | None = None
    """Leading trial pairs left out of the comparison."""


class ArmCounts(_Fixed):
    """One arm's requests."""

    scheduled: int
    """Requests scheduled to the arm."""
    attempted: int
    """Requests the generator sent."""
    ok: int
    """Requests answered successfully."""
    failed: int
    """Attempts that failed."""
    error_share: float | None
    """failed / attempted; null without attempts."""


class CacheShares(_Growing):
    """Cache-hit shares of the answered requests per arm; a difference makes the night invalid."""

    reported: bool
    """Whether the target reported cache hits (otherwise they are read from a latency mixture)."""
    method: str
    """How the shares were found."""
    baseline: float | None
    """The baseline's share."""
    candidate: float | None
    """The candidate's share."""
    low: float | None
    """The lower bound of the difference's interval."""
    high: float | None
    """The upper bound of the difference's interval."""
    confounded: bool
    """Whether the shares differ enough to make the night invalid."""
    sentence: str
    """Why, in words; empty when not confounded."""


class RateBasis(_Growing):
    """The relative peak each arm was loaded at, calibrated on the baseline."""

    calibrated_on: str
    """The arm the rate was calibrated on."""
    text: str
    """The rate in words."""


class TrialRow(_Fixed):
    """One trial: its arm, time slice, attempts, failures and the first compared percentile."""

    trial: int
    """The trial's number, from 0."""
    arm: str
    """`baseline` or `candidate`."""
    start_s: float
    """Start of its slice, seconds from the run's start."""
    end_s: float
    """End of its slice."""
    attempted: int
    """Attempts answered or failed in it."""
    failed: int
    """Attempts that failed."""
    percentile: float
    """The percentile shown."""
    value_ms: float | None
    """The percentile over the trial's answered requests; null without any."""


class ErrorTest(_Growing):
    """Failure shares of the two arms and whether the candidate's is worse."""

    baseline: float | None
    """The baseline's failure share."""
    candidate: float | None
    """The candidate's failure share."""
    difference: float | None
    """candidate − baseline."""
    ci_low: float | None
    """Lower bound of the difference's interval."""
    ci_high: float | None
    """Upper bound of the difference's interval."""
    margin: float
    """How much worse the candidate may be and still count as not worse."""
    worse: bool
    """Whether the candidate fails significantly more."""
    not_worse: bool
    """Whether the candidate is shown not worse by more than the margin."""


class ErrorRow(ErrorTest):
    """The failure-share question over every compared request of the night."""

    population: str
    """Which requests."""
    text: str
    """The answer in words."""


class GroupRow(_Growing):
    """One percentile of one population: the ratio test, the error test and the verdict."""

    name: str
    """`population: SLO`."""
    population: str
    """The population's name."""
    scope: dict[str, Any]
    """Which requests it holds (e.g. a priority)."""
    slo: str
    """The SLO whose percentile is compared."""
    metric: str
    """The column compared (`latency_ms`, `ttft_ms`, ...)."""
    percentile: float
    """The percentile compared."""
    compared: bool
    """Whether enough answers came to compare it."""
    not_compared: str
    """Why not, when not."""
    samples: dict[str, int]
    """Answered requests per arm."""
    pairs: int
    """Trial pairs behind the ratio."""
    baseline_ms: float | None
    """The baseline's percentile."""
    candidate_ms: float | None
    """The candidate's percentile."""
    ratio: float | None
    """candidate / baseline; null when infinite or not compared."""
    ci_low: float | None
    """Lower bound of the ratio's interval."""
    ci_high: float | None
    """Upper bound of the ratio's interval."""
    ratio_text: str
    """The ratio and its interval in words."""
    mde: float | None
    """The smallest ratio this run could detect."""
    mde_text: str
    """The same in words."""
    errors: ErrorTest
    """The population's failure-share test."""
    threshold: float | None = None
    """The ratio this comparison is judged against: the SLO's own `ab_threshold` or the run's."""
    verdict: GroupVerdict
    """The comparison's verdict."""
    reason: str
    """Why, in words."""


class AbDocument(_Growing):
    """ab.json: what was compared, how, and the verdict with its sentence and exit code."""

    schema_version: int
    """The document's version."""
    scenario: str
    """The scenario's name."""
    threshold: float
    """The ratio at or beyond which a slower candidate is a regression."""
    confidence: float
    """The confidence of the night's statements."""
    error_margin: float
    """How much more the candidate may fail and still count as not worse."""
    slo_thresholds: dict[str, float] | None = None
    """The SLOs' own thresholds, where the scenario gives them (`ab_threshold`)."""
    tests: int
    """Statements made (each compared percentile, and the failure shares)."""
    test_confidence: float
    """Each statement's confidence after the correction for several."""
    pass_confidence: float
    """The confidence of the upper bound a pass rests on."""
    design: TrialDesign
    """How the night was cut into trials."""
    targets: dict[str, Any]
    """The baseline and candidate targets."""
    generator: GeneratorHealth
    """Whether the load generator kept up."""
    aborted: list[str]
    """Why the run stopped early, when it did."""
    arms: dict[Literal["baseline", "candidate"], ArmCounts]
    """Each arm's requests."""
    cache: CacheShares
    """Whether cache hits confound the comparison."""
    calibration: dict[str, Any] | None
    """The runner's calibration record (its measured false-alarm rate); null when it is not calibrated."""
    runner: str
    """The runner's calibration in words."""
    rate: RateBasis | None
    """The relative peak each arm was loaded at; null when the scenario gave a number."""
    trials: list[TrialRow]
    """Every trial."""
    groups: list[GroupRow]
    """Every comparison."""
    errors: list[ErrorRow]
    """The night's failure-share question."""
    verdict: Literal["no_regression", "regression", "inconclusive", "invalid"]
    """The night's verdict."""
    sentence: str
    """The verdict in one sentence, with the ratio and its interval."""
    reason: str
    """Every comparison's reason."""
    exit_code: int
    """The exit code the verdict maps to."""


def read_ab(path: Path) -> AbDocument:
    """An ab.json parsed through its model (pydantic's ValidationError names a malformed field)."""
    return AbDocument.model_validate_json(Path(path).read_text(encoding="utf-8"))
