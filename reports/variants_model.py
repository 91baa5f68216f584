"""comparison.json as one typed model: the variants of one scenario compared, row by row.

`rushhour.reports.variants.write_comparison` builds the document from each variant's summary.json
and raw files, validates it here and writes what the model dumps; a reader parses the file back
through `ComparisonDocument`. A variant whose results could not be read has every key too: verdict
"invalid" with the reason, empty SLOs, faults and node-hours, and null for each measured figure.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ComparisonDocument", "FaultCell", "SloCell", "VariantRow"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class SloCell(_Part):
    """One SLO of a variant, as its summary.json judged it."""

    name: str
    """The SLO's name in the scenario."""
    met: bool
    """Whether the variant met it."""
    measured: float | None
    """The measured value (milliseconds for latency kinds, a share for the others); null when not measured."""
    kind: str | None
    """The SLO's kind (`latency`, `availability`, ...)."""
    objective_text: str
    """The objective in words, e.g. `P99 <= 500 ms`."""


class FaultCell(_Part):
    """One fault of a variant and how the target came through it."""

    name: str
    """The fault's name in the scenario."""
    recovered: bool | None
    """Whether the target recovered within the fault's rule; null when not judged."""
    recovery_s: float | None
    """Seconds from the fault to recovery; null when it did not recover."""
    failed_requests: int | None
    """Requests that failed in the fault's window."""


class VariantRow(_Part):
    """One variant: its verdict, SLOs, busiest-phase P99, faults, node-hours and cost."""

    name: str
    """The variant's name in the scenario."""
    results_dir: str
    """The variant's results folder."""
    verdict: Literal["pass", "fail", "invalid"]
    """The variant's verdict from its summary.json; `invalid` also when its results could not be read."""
    verdict_reason: str
    """Why, in words (for an unreadable variant, what was wrong with its files)."""
    slos: list[SloCell]
    """Every SLO with its verdict."""
    requests: dict[str, Any] | None
    """The summary's request counts (scheduled, sent, ok, ...); null for an unreadable variant."""
    p99_ms: float | None
    """P99 latency over the whole run, milliseconds."""
    peak_phase: str | None
    """The phase with the highest scheduled arrival rate; null when the run has no phases."""
    p99_peak_ms: float | None
    """P99 latency from the intended send in the busiest phase (of the whole run without phases), milliseconds."""
    faults: list[FaultCell]
    """Every fault with its recovery."""
    node_hours: dict[str, float]
    """Node-hours per pool over the schedule window, from the scraped `nodes_alive`."""
    total_usd: float | None
    """The run's total cost in dollars; null when the scenario has no prices."""
    usd_per_1k_chars: float | None
    """Dollars per thousand characters translated."""


class ComparisonDocument(_Part):
    """comparison.json: every variant side by side and the cheapest that met every SLO."""

    results_dir: str
    """The folder that holds the variants' results folders and this file."""
    variants: list[VariantRow]
    """One row per variant, in the scenario's order."""
    pools: list[str]
    """Every pool that any variant ran nodes in, sorted: the node-hours columns."""
    slo_names: list[str]
    """Every SLO name of any variant, in first-seen order: the SLO columns."""
    fault_names: list[str]
    """Every fault name of any variant, in first-seen order: the fault columns."""
    passed: list[str]
    """The variants whose verdict is `pass`."""
    cheapest_passing: str | None
    """The passing variant with the lowest total cost (then cost per 1k characters, then node-hours); null when none passed."""
    conclusion: str
    """The answer in one sentence."""

    def as_dict(self) -> dict[str, Any]:
        """The document as plain JSON values, keys in the order written."""
        return self.model_dump(mode="json")
