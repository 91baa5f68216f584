"""Which requests an SLO or a phase covers.

Phases come from the requests' own `phase` column when the generator filled it, else from the
`phase` events; either way every request gets one label so SLOs can be cut per phase.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.rundata.attempts import attempted, good
from rushhour.reports.schema import LATENCY_KINDS, SloSpec


def phase_labels(requests: pd.DataFrame, phase_events: list[dict[str, Any]]) -> pd.Series:
    """One phase name per request ("" when none applies), by intended send time."""
    column = requests["phase"]
    if (column != "").any() or not phase_events:
        return column
    labels = np.full(len(requests), "", dtype=object)
    intended = requests["intended_s"].to_numpy()
    for event in phase_events:
        inside = (intended >= float(event["start_s"])) & (intended < float(event["end_s"]))
        labels[inside] = str(event["name"])
    return pd.Series(labels, index=requests.index, name="phase")


def phase_segments(labels: pd.Series, phase_events: list[dict[str, Any]],
                   intended: np.ndarray) -> list[tuple[str, float | None, float | None, np.ndarray]]:
    """Each stretch of a phase as it happened: (name, start, end, mask), in time order.

    A name that returns (base, then base again after a peak) gets one row per stretch. Phases
    come from the `phase` events; requests labelled with a phase that no event covers (an
    aborted run writes only the events it reached) follow, one row per name, by first arrival.
    """
    segments: list[tuple[str, float | None, float | None, np.ndarray]] = []
    covered = np.zeros(len(labels), dtype=bool)
    for event in sorted(phase_events, key=lambda e: float(e.get("start_s", 0.0))):
        if event.get("start_s") is None or event.get("end_s") is None:
            continue
        start, end = float(event["start_s"]), float(event["end_s"])
        mask = (intended >= start) & (intended < end)
        covered |= mask
        segments.append((str(event["name"]), start, end, mask))
    values = labels.to_numpy()
    rest = (values != "") & ~covered
    if rest.any():
        first = pd.Series(intended[rest]).groupby(values[rest]).min().sort_values()
        segments += [(str(name), None, None, rest & (values == name)) for name in first.index]
    return segments


def slo_scope(requests: pd.DataFrame, phases: pd.Series, spec: SloSpec) -> np.ndarray:
    """Boolean mask of the requests that `spec`'s priority/mode/phase filters select."""
    mask = np.ones(len(requests), dtype=bool)
    if spec.priority is not None:
        mask &= (requests["priority"] == spec.priority).to_numpy()
    if spec.mode is not None:
        mask &= (requests["mode"] == spec.mode).to_numpy()
    if spec.phase is not None:
        mask &= (phases == spec.phase).to_numpy()
    if spec.request_kind is not None:
        mask &= (requests["kind"] == spec.request_kind).to_numpy()
    return mask


def valid_and_bad(requests: pd.DataFrame, spec: SloSpec) -> tuple[np.ndarray, np.ndarray]:
    """Per request: does it count towards `spec` (valid), and does it spend budget (bad)?

    Latency is a good-events ratio (the SRE workbook's): every attempted request is valid, and
    it is good only when it succeeded within the threshold, so a failure spends the budget at
    whatever speed it failed. Availability counts every scheduled request, a missing answer
    included. The degraded share is about answers, so only ok requests are valid for it.
    """
    ok = requests["ok"].to_numpy()
    if spec.kind == "availability":
        return np.ones(len(requests), dtype=bool), ~ok
    if spec.kind in LATENCY_KINDS:
        valid = attempted(requests)
        return valid, valid & ~good(requests, float(spec.threshold_ms or 0), spec.column)
    return ok, ok & requests["degraded"].to_numpy()
