"""summary.json as one typed model: every key the summary may hold, with its type.

The summary is assembled once, in `rushhour.reports.build.summarise_run`, from the sections that
`rushhour.reports.summary.aggregate.summarise` computes, the story (before/during/after per fault, findings,
headline), the live-metrics window and an optional comparison; the result is validated here, so a
misspelled or unknown key, or a value of the wrong type, fails the build instead of reaching a
renderer. The sections with one fixed shape (what was run, the generator's health, the phases,
documents through the jobs API, the steady windows, the live-metrics window) are typed models of
their own, and so are the SLO and fault rows (`rushhour.reports.summary.rows`), the cost
(`rushhour.reports.summary.cost_section`), the measured sections beside the verdict (streaming, goodput, the
target's metrics, soak: `rushhour.reports.summary.measures_section`) and the sections that repeat what the run
recorded about itself (the environment, the leak audit, the scraper: `rushhour.reports.summary.harness_section`),
and so are the two whose shape the drill's own steps decide (the calibration of a relative peak,
the harness's overhead: `rushhour.reports.summary.scenario_section`). The comparison is the gate's own dataclass
(`rushhour.reports.gate.compare.Comparison`, its side-by-side rows plain JSON objects).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rushhour.reports.estimate.intervals import Percentile
from rushhour.reports.gate.compare import Comparison
from rushhour.reports.measures.steady import SteadyWindow
from rushhour.reports.summary.cost_section import CostSection
from rushhour.reports.summary.finding_rules import Finding
from rushhour.reports.summary.harness_section import EnvironmentFacts, LeakAuditSection, ScraperHealth
from rushhour.reports.summary.measures_section import (
    GoodputSection,
    SoakSection,
    StreamingSection,
    TargetMetricsSection,
)
from rushhour.reports.summary.rows import FaultRow, SloRow
from rushhour.reports.summary.scenario_section import CalibrationFacts, OverheadSection

__all__ = ["DocumentsSection", "GeneratorHealth", "LatencyDetail", "LiveWindow", "PhaseMark", "ScenarioFacts",
           "SteadySection", "Summary"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScenarioFacts(_Part):
    """What was run (`rushhour.reports.summary.aggregate._scenario`): the scenario, its traffic and where the results are."""

    name: str
    seed: int | None
    duration_s: float
    time_scale: float
    rate_scale: float | None
    traffic_model: str | None
    results_dir: str
    peak_rps: float | str | None
    calibration: CalibrationFacts | None
    """What a relative `peak_rps` resolved to, with a `text` line for the report header."""


class LatencyDetail(_Part):
    """Each summary percentile (P50 to P99.9) with its sample count and 95% interval
    (`rushhour.reports.summary.aggregate.latency_sections`): over every attempted request from the intended send
    (corrected) and from the actual send (uncorrected), and over ok requests only."""

    corrected: dict[str, Percentile]
    uncorrected: dict[str, Percentile]
    corrected_ok_only: dict[str, Percentile]


class GeneratorHealth(_Part):
    """Whether the load generator kept up (`rushhour.reports.summary.aggregate.generator_health`); `valid` is False
    with the `reasons` when it, not the target, was the bottleneck."""

    schedule_lag_p99_ms: float | None
    lag_samples: int
    cpu_max: float | None
    pool_wait_p99_ms: float | None
    duplicates: int
    max_lag_p99_ms: float
    valid: bool
    reasons: list[str]


class PhaseMark(_Part):
    """One phase of the traffic model as the run's events marked it (seconds from the start)."""

    name: str | None
    start_s: float | None
    end_s: float | None


class DocumentsSection(_Part):
    """Documents sent through the jobs API (`rushhour.reports.measures.documents.documents_section`): counts, and the
    percentiles (with their sample count) of the time to the first segment and to the whole document."""

    count: int
    ok: int
    failed: int
    timeouts: int
    chars_p50: float | None
    first_segment_ms: dict[str, float | int | None]
    full_document_ms: dict[str, float | int | None]


class SteadySection(_Part):
    """How the steady windows were found, whether any was, and each phase's (`rushhour.reports.measures.steady.steady_section`)."""

    method: str
    found: bool
    windows: list[SteadyWindow]


class LiveWindow(_Part):
    """Where the drill's live metrics were and when it ran (`rushhour.reports.measures.live.live_section`)."""

    metrics_port: int | None
    metrics_url: str | None
    wall_start: str | None
    wall_end: str | None
    wall_start_ms: int | None
    wall_end_ms: int | None
    dashboard: str
    grafana_query: str | None = None
    """Present only when both ends of the run are known."""


class Summary(BaseModel):
    """One run's summary (summary.json, schema `schema_version`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int
    scenario: ScenarioFacts
    requests: dict[str, int]
    """How the scheduled requests split: scheduled = not_sent + ok + failed."""
    throughput_rps: float | None
    throughput_window_s: list[float]
    latency_ms: dict[str, float | None]
    latency_uncorrected_ms: dict[str, float | None]
    latency_ok_only_ms: dict[str, float | None]
    latency_detail: LatencyDetail
    slos: list[SloRow]
    implicit_slo: str | None
    cost: CostSection | None
    faults: list[FaultRow]
    """One row per injected fault, each with its before/during/after `periods`."""
    generator: GeneratorHealth
    phases: list[PhaseMark]
    environment: EnvironmentFacts
    missing: list[str]
    aborted: list[str]
    leak_audit: LeakAuditSection | None
    scraper: ScraperHealth | None
    documents: DocumentsSection | None = None
    streaming: StreamingSection | None
    goodput: GoodputSection | None
    steady: SteadySection | None = Field(default=None, description="each phase's steady window after its warm-up "
                                                                    "(MSER-5)")
    target_metrics: TargetMetricsSection | None = Field(default=None, description="the scrape of the target's own metrics")
    harness_overhead: OverheadSection | None = Field(default=None, description="the latency the harness itself adds "
                                             "at the run's peak rate (rushhour.reports.measures.overhead), when measured")
    soak: SoakSection | None = Field(default=None, description="per-window latency, errors, memory and their trends")
    deviations: list[str]
    fail_on_deviation: bool
    verdict: Literal["pass", "fail", "invalid"]
    verdict_reason: str
    fault_period_s: float
    findings: list[Finding]
    """The statements that explain the verdict, most important first (`rushhour.reports.summary.findings`)."""
    headline: str
    live: LiveWindow
    comparison: Comparison | None = Field(default=None, description="the gate against baseline runs, when given")

    def as_dict(self) -> dict[str, Any]:
        """The JSON object as written (a key left at its default absent, as before validation)."""
        return self.model_dump(exclude_unset=True)
