"""`steady_only` SLOs: the verdict taken again over the steady windows (rushhour.reports.measures.steady), the
whole run's figures kept beside it, so a warm-up neither hides nor decides the verdict unseen.

`rushhour.reports.measures.slos` judges every SLO over the whole run first; this step replaces the verdict of each
`steady_only` one with the verdict over the requests sent inside a steady window. Burn rates and
the per-phase rows stay those of the whole run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rushhour.reports.measures.slos import measure
from rushhour.reports.rundata.selection import slo_scope, valid_and_bad
from rushhour.reports.schema import SloSpec

WHOLE_RUN_KEYS = ("kind", "measured", "met", "samples", "bad", "budget_consumed", "ci", "good_share")
NO_WINDOW = "no steady window was found, so the whole run is judged"


def judge_steady(results: list[dict[str, Any]], specs: list[SloSpec], requests: pd.DataFrame,
                 phases: pd.Series, steady: np.ndarray | None) -> list[dict[str, Any]]:
    """`results` (one per spec, in order) with every steady-only verdict taken over `steady`."""
    return [_steady_one(result, spec, requests, phases, steady) if spec.steady_only else result
            for result, spec in zip(results, specs)]


def _steady_one(whole: dict[str, Any], spec: SloSpec, requests: pd.DataFrame, phases: pd.Series,
                steady: np.ndarray | None) -> dict[str, Any]:
    beside = {key: whole[key] for key in WHOLE_RUN_KEYS if key in whole}
    if steady is None:
        return whole | {"steady_only": True, "judged_over": "whole run", "whole_run": beside, "steady_note": NO_WINDOW}
    scope = slo_scope(requests, phases, spec)
    valid, bad = valid_and_bad(requests, spec)
    judged = measure(requests, scope & valid & steady, scope & bad & steady, spec)
    return whole | judged | {"steady_only": True, "judged_over": "steady windows", "whole_run": beside,
                             "steady_note": None}
