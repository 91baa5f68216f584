"""What several parts of one run's summary need, derived once from its results.

The fault windows feed the fault table, the cost split, the before/during/after periods and the
charts; the phase of every request feeds the SLOs and goodput; the judged SLOs feed the verdict
and the recovery limits. `RunFacts.of` works each of them out once, and every step of the
summary pipeline (`rushhour.reports.build`) reads them from here instead of deriving them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rushhour.reports.measures.faults import FaultWindow, RecoveryLimits, fault_windows
from rushhour.reports.measures.steady import SteadyWindow, steady_windows
from rushhour.reports.rundata.results import RunData
from rushhour.reports.rundata.selection import phase_labels
from rushhour.reports.rundata.window import schedule_window
from rushhour.reports.schema import SloSpec

__all__ = ["IMPLICIT_AVAILABILITY", "IMPLICIT_SLO", "RunFacts", "judged_slos"]

IMPLICIT_AVAILABILITY = 0.99
IMPLICIT_SLO = SloSpec(name="availability (implicit)", kind="availability", objective=IMPLICIT_AVAILABILITY)
"""A scenario that states no SLO is judged on this one, so a run whose requests all failed never passes."""


def judged_slos(specs: list[SloSpec]) -> tuple[list[SloSpec], str | None]:
    """The SLOs a run is judged on, and the sentence saying so when the scenario gave none."""
    if specs:
        return specs, None
    return [IMPLICIT_SLO], (f"The scenario states no SLO, so the run is judged on an implicit availability "
                            f"objective: at least {100 * IMPLICIT_AVAILABILITY:g}% of scheduled requests answered ok.")


@dataclass(frozen=True)
class RunFacts:
    """The derived facts of one run that more than one summary section reads."""

    windows: list[FaultWindow]
    """Each injected fault's window, from its fault_start/fault_end events."""
    phase_events: list[dict[str, Any]]
    phases: pd.Series
    """The phase of every request ("" where none applies)."""
    slos: list[SloSpec]
    """The SLOs the run is judged on: the scenario's, else the implicit availability objective."""
    implicit_slo: str | None
    """The sentence saying the implicit objective is in use; None when the scenario states SLOs."""
    limits: RecoveryLimits
    window: tuple[float, float]
    """The scheduled stretch of the run (start, end) in run seconds."""
    steady: list[SteadyWindow] = field(default_factory=list)
    """Each phase's steady window after its warm-up (rushhour.reports.measures.steady), for steady-only SLOs and the charts."""

    @classmethod
    def of(cls, run: RunData) -> RunFacts:
        phase_events = run.events_of("phase")
        slos, implicit = judged_slos(run.scenario.slos)
        window = schedule_window(run)
        return cls(windows=fault_windows(run.events, run.duration_s), phase_events=phase_events,
                   phases=phase_labels(run.requests, phase_events), slos=slos, implicit_slo=implicit,
                   limits=RecoveryLimits.from_slos(slos), window=window,
                   steady=steady_windows(run.requests, phase_events, window))
