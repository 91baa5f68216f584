"""Stand-ins for a capacity search without a server: a step's requests on a machine of known speed,
a step runner whose steps pass up to 60 req/s on such a machine, and the job a condition's search
reads, run through the product's own `runner._search_condition`."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rushhour.scenarios.capacity import runner
from rushhour.scenarios.capacity.conditions import HEALTHY
from rushhour.scenarios.capacity.search import SearchSettings
from rushhour.scenarios.capacity.stepper import StepRecord
from rushhour.scenarios.capacity.steps import Assessment, Decision, StepRules
from rushhour.scenarios.capacity.target import Target

RULES = StepRules(measure_s=30.0, warmup_s=5.0)


def step_record(index: int, rate: float, speed: float, rng: np.random.Generator, decision: Decision = "pass"
                ) -> StepRecord:
    """A step at a light `rate` on a machine whose service times are 20 ms x `speed`, with an
    AR(1) wander of the log (sd 4%, lag-1 0.9) inside the window, and one request that failed."""
    intended = np.sort(rng.uniform(0.0, RULES.schedule_s, round(rate * RULES.schedule_s)))
    level, logs = 0.0, np.empty(intended.size)
    for k in range(intended.size):
        level = 0.9 * level + rng.standard_normal() * 0.04 * np.sqrt(1 - 0.81)
        logs[k] = level
    latency = 20.0 * speed * np.exp(logs)
    ok = np.ones(intended.size, dtype=bool)
    ok[intended.size // 2] = False
    latency[intended.size // 2] = 5.0  # a fast failure: left out of the comparison
    frame = pd.DataFrame({"intended_s": intended, "latency_ms": latency, "ok": ok}).sample(frac=1.0, random_state=1)
    return StepRecord(index, rate, Assessment(decision, None, "met", now_s=RULES.schedule_s), frame, pd.DataFrame(),
                      wall_s=RULES.schedule_s, early=False, work_dir=Path(f"step-{index:02d}"), rules=RULES)


class KneeAt60:
    """Stands in for `StepRunner`: steps pass up to 60 req/s and fail above, on a machine whose speed
    at each step `speed()` says (1.0: service times of 20 ms); a subclass says how it changes and
    keeps its last instance in `last`."""

    seed = 0
    last: KneeAt60

    def __init__(self, **_kwargs: object) -> None:
        self.index = 0
        self.rates: list[float] = []
        self.rules: list[StepRules | None] = []
        """Each step's rules as the search set them (None: the runner's own)."""
        self.rules_at: Any = None
        self.rng = np.random.default_rng(self.seed)

    def continues(self, _rate: float) -> bool:
        return False

    def release(self) -> None:
        return None

    def speed(self) -> float:
        return 1.0

    def run(self, rate: float) -> StepRecord:
        self.index += 1
        self.rates.append(rate)
        self.rules.append(self.rules_at(rate) if self.rules_at is not None else None)
        type(self).last = self
        return step_record(self.index, rate, self.speed(), self.rng, decision="pass" if rate <= 60.0 else "fail")


def search_job(tmp_path: Path, drift_check: str) -> SimpleNamespace:
    """A condition's search from 20 to 100 req/s at 10% precision, its machine checked by `drift_check`."""
    return SimpleNamespace(known_fail=None, probe=False, mix=None, slos=[], rules=RULES, out_dir=tmp_path, seed=0,
                           protocol=None, measure_at=None, start_rps=None, require_rps=None, drift_check=drift_check,
                           retry_rules=None, retry_max_s=None, settings=SearchSettings(min_rps=20.0, max_rps=100.0, precision=0.1),
                           scenario=SimpleNamespace(load=SimpleNamespace(max_lag_p99_ms=250.0)), cost_model=None)


def search_condition(monkeypatch: pytest.MonkeyPatch, service: type[KneeAt60], tmp_path: Path, drift_check: str
                     ) -> tuple[dict[str, Any], list[str]]:
    """The healthy condition searched on `service` (the runner's settling skipped): its entry and what it said."""
    monkeypatch.setattr(runner, "StepRunner", service)
    monkeypatch.setattr(runner, "settle", lambda _url: 0.0)
    said: list[str] = []
    entry = runner._search_condition(search_job(tmp_path, drift_check),  # type: ignore[arg-type]
                                     Target("http://127.0.0.1:9", None, "stand-in"), HEALTHY, said.append,
                                     start_rps=None, serves_jobs=False)
    return entry, said
