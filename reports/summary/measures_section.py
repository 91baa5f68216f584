"""The summary's measured sections beside the verdict, as typed models: streaming, goodput, the
target's own metrics and the soak windows.

Each is made by one function (`rushhour.reports.measures.streaming.streaming_section`,
`rushhour.reports.measures.goodput.goodput_section`, `rushhour.reports.measures.targetmetrics.target_metrics_section`,
`rushhour.reports.measures.drift.soak_section`) and is None when the run has nothing to show there; each model
writes its fields in the order its producer does, and refuses a field it does not know.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["GoodputPhase", "GoodputSection", "NamedMetric", "OutputTokens", "ScrapeError", "SoakSection",
           "SoakTrend", "SoakWindow", "StreamMetric", "StreamingSection", "TargetMetricsSection"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StreamMetric(_Part):
    """One streaming figure over the successful answers: what it is, how many answers gave it, and
    its summary percentiles."""

    label: str
    samples: int
    p50: float | None
    p95: float | None
    p99: float | None
    p999: float | None


class OutputTokens(_Part):
    total: int
    mean: float | None
    requests: int
    """Requests that reported their output tokens."""


class StreamingSection(_Part):
    """TTFT, TPOT and inter-token gaps (keyed by column, e.g. `ttft_ms`), output tokens, and how
    many requests streamed."""

    metrics: dict[str, StreamMetric]
    output_tokens: OutputTokens
    streamed: int


class GoodputPhase(_Part):
    """Goodput over one phase stretch as it happened (no span for a phase no event marked)."""

    phase: str
    start_s: float | None
    end_s: float | None
    good: int
    attempted: int
    rps: float | None
    share: float | None


class GoodputSection(_Part):
    """Requests per second that met every per-request objective (named in `objectives`), over the
    schedule's window and per phase stretch."""

    objectives: list[str]
    good: int
    attempted: int
    rps: float | None
    share: float | None
    phases: list[GoodputPhase]


class ScrapeError(_Part):
    """One `target_metrics_error` event (the first twenty are kept)."""

    t_s: float | None
    reason: str | None
    errors: int | None


class NamedMetric(_Part):
    """A metric the scenario named, and whether the target exported it."""

    metric: str
    found: bool


class TargetMetricsSection(_Part):
    """Where the target's own metrics came from, how the scrape went, and which metrics rushhour
    recognised among them."""

    url: str | None
    scrapes: int | None
    failed: int
    dropped_series_samples: int | None
    errors: list[ScrapeError]
    recognised: list[str]
    named: list[NamedMetric]


class SoakWindow(_Part):
    """One window's figures at its middle (None where the window had no data)."""

    t_s: float
    latency_p99: float | None
    error_rate: float | None
    server_memory: float | None


class SoakTrend(_Part):
    """The least-squares line through one metric's windows: its slope per hour with the 95%
    interval, untrusted (no interval) with too few windows; the lag-1 correlation charged to it,
    the windows' worth in independent points and the method (`rushhour.reports.estimate.trend`)."""

    slope_per_h: float | None
    ci: list[float | None]
    intercept: float | None
    points: int
    trusted: bool
    lag1: float | None = None
    effective_points: float | None = None
    method: str | None = None
    unit: str


class SoakSection(_Part):
    """Latency, errors and memory per window with a trend through each (`shown` when the report
    shows the section: a long run, or a drift SLO)."""

    shown: bool
    window_s: float
    windows: list[SoakWindow]
    trends: dict[str, SoakTrend]
