"""The summary sections whose shape a drill's own steps decide, as typed models: the calibration a
relative peak resolved to (`scenario.calibration`) and the harness's overhead (`harness_overhead`).

`scenario.calibration` is the resolved scenario's `traffic.calibration` (the fields of
`rushhour.kernel.calibration.Calibration`, kept in the results folder's scenario.yaml) with the report's
`text` line added by `rushhour.reports.summary.aggregate`; a field the calibration left at its default may be
missing from a scenario written by hand, so those are optional and stay absent when absent.
`harness_overhead` is `rushhour.reports.measures.overhead.overhead_section`, made from the `harness_overhead` event
that `rushhour.scenarios.run.overhead.run_overhead_check` writes: one shape when the check measured (its
rungs as `judge_steps` judged them), another when it was tried and failed. The layers keep
`reports` from importing `scenarios`, so these models spell the fields again; a test feeds them
what the scenarios code writes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

from rushhour.kernel.calibration import CalibrationFields

__all__ = ["CalibrationFacts", "HarnessQuantiles", "OverheadMeasured", "OverheadSection", "OverheadStep",
           "OverheadUnmeasured", "RunLatency", "TightSlo"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CalibrationFacts(CalibrationFields):
    """What a relative `peak_rps` ("0.7x capacity") resolved to, and the line the report header shows:
    the calibration record's fields (`rushhour.kernel.calibration`), those a hand-written scenario may
    leave out absent rather than empty."""

    text: str


class HarnessQuantiles(_Part):
    """Latency (or time to first token) the harness adds against a null target: P50, P99, P99.9."""

    p50: float | None
    p99: float | None
    p99_9: float | None


class OverheadStep(_Part):
    """One rung of the overhead ladder, judged as a drill judges its generator
    (`rushhour.scenarios.run.overhead.judge_steps`). The rungs are read from the overhead cache, a file on
    the machine that a check (or a person) wrote: a judgement the file lacks stays absent."""

    rate_rps: float
    requests: int | None = None
    valid: bool | None = None
    reasons: list[str] | None = None
    lag_p99_ms: float | None = None
    pool_wait_p99_ms: float | None = None
    latency_ms: HarnessQuantiles | None
    """None when no request of the rung succeeded."""
    ttft_ms: HarnessQuantiles | None = None
    """None when the protocol does not stream (or no request of the rung succeeded)."""


class RunLatency(_Part):
    """The run's own latency percentiles, beside the harness's."""

    p50: float | None
    p99: float | None
    p999: float | None


class TightSlo(_Part):
    """An SLO whose threshold lies within `rushhour.reports.measures.overhead.TIGHT_FACTOR` x the harness's own P99."""

    name: str
    threshold_ms: float
    harness_p99_ms: float
    ratio: float | None
    text: str


class OverheadMeasured(_Part):
    """The check measured: the rung standing for the run's peak, where the figures came from, every rung."""

    measured: Literal[True]
    error: None
    peak_rps: float | None
    at_rps: float | None
    max_valid_rps_per_process: float | None
    latency_ms: HarnessQuantiles
    ttft_ms: HarnessQuantiles | None
    run_latency_ms: RunLatency
    p99_share_of_run: float | None
    measured_at: str | None
    cached: bool
    steps: list[OverheadStep]
    tight_slos: list[TightSlo]


class OverheadUnmeasured(_Part):
    """The check was tried and gave no figure: why."""

    measured: Literal[False]
    error: str
    tight_slos: list[TightSlo]


def _overhead_shape(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "measured" if isinstance(value, OverheadMeasured) else "unmeasured"
    return "measured" if isinstance(value, dict) and value.get("measured") is True else "unmeasured"


OverheadSection = Annotated[Annotated[OverheadMeasured, Tag("measured")] | Annotated[OverheadUnmeasured, Tag("unmeasured")],
                            Discriminator(_overhead_shape)]
"""The harness's overhead at the run's peak rate (`rushhour.reports.measures.overhead.overhead_section`), measured or not."""
