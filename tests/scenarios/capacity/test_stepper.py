"""A step's watch loop against a fake load session: when a generator that has finished counts as
one that stopped early."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest

from reports.schema import SloSpec
from scenarios.capacity.stepper import StepRunner
from scenarios.capacity.steps import StepRules

P99 = SloSpec(name="p99", kind="latency", percentile=99, threshold_ms=500)
RULES = StepRules(measure_s=1.0, warmup_s=0.5, tail_s=1.0, record_lag_s=0.0)


class _SpentSession:
    """A generator that has already fired its whole schedule and recorded every answer."""

    settings = SimpleNamespace(jobs_in_use=False)

    def __init__(self, offsets: np.ndarray) -> None:
        self._parts = pd.DataFrame({
            "row": np.arange(offsets.size), "intended_s": offsets, "sent_s": offsets, "done_s": offsets + 0.05,
            "pool_wait_ms": 0.0, "status": 200, "error": "", "model": "", "cached": False, "degraded": False,
            "node": "", "first_segment_s": np.nan, "via": "translate"})
        self._given = False

    def poll(self) -> pd.DataFrame:
        parts, self._given = (self._parts.iloc[:0] if self._given else self._parts), True
        return parts

    def cpu_percent(self) -> float:
        return 0.0

    def finished(self) -> bool:
        return True


def _watch(offsets: list[float]) -> Any:
    schedule = pd.DataFrame({"offset_s": offsets, "kind": "short", "chars": 10, "priority": "paid", "mode": "auto",
                             "text_id": 1, "tenant": "t", "phase": "", "deadline_ms": 2000})
    runner = cast(StepRunner, SimpleNamespace(rules=RULES, specs=[P99]))
    session = _SpentSession(np.asarray(offsets, dtype=float))
    return StepRunner._watch(runner, cast(Any, session), schedule, [], time.time())


@pytest.mark.slow
def test_stepper_a_generator_done_before_its_last_request_was_due_stopped_early() -> None:
    verdict = _watch([0.1, 0.6, 1.2])  # finished at the first poll (0.5 s), a request due at 1.2 s
    assert verdict.decision == "invalid" and "stopped before the step's end" in verdict.reason


@pytest.mark.slow
def test_stepper_a_generator_whose_schedule_is_spent_is_judged_at_the_step_end() -> None:
    verdict = _watch([0.1, 0.2, 0.3])  # every request was due before the first poll
    assert verdict.now_s >= RULES.schedule_s
    assert verdict.decision == "fail" and verdict.limiting == "p99" and "not shown met" in verdict.reason
