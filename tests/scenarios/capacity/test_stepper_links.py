"""A capacity step's schedule is written through kernel/atomic: a link planted at a step's
`schedule.parquet` is refused, naming it, its target untouched, and no load is fired for that step;
a plain step folder gets its schedule written whole.

The attack: the capacity search's work folder is shared or unpacked from elsewhere, with the
next step's `step-01/schedule.parquet` planted as a symbolic link to a file of the victim's.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from rushhour.kernel.atomic import LinkedOutputError
from rushhour.kernel.contract import SCHEDULE_FILE
from rushhour.scenarios.capacity import stepper
from rushhour.scenarios.capacity.job import load_mix, step_rules
from rushhour.scenarios.capacity.stepper import StepRunner
from rushhour.scenarios.spec.model import load_scenario

VICTIM_TEXT = "the user's own file\n"


def _runner(tmp_path: Path) -> StepRunner:
    path = tmp_path / "steady.yaml"
    path.write_text(yaml.safe_dump({"name": "steady", "traffic": {"model": "constant:1", "duration": "60s", "seed": 3},
                                    "target": {"url": "http://127.0.0.1:9"}, "load": {"max_lag_p99_ms": 250},
                                    "slos": [{"name": "p95", "kind": "latency", "percentile": 95,
                                              "threshold_ms": 500}]}))
    scenario = load_scenario(path)
    return StepRunner(url="http://127.0.0.1:9", mix=load_mix(scenario, source=str(path), base_dir=tmp_path),
                      specs=list(scenario.slos), load=scenario.load, rules=step_rules(4.0, 250.0),
                      work_dir=tmp_path / "steps")


class _Started(Exception):
    """The step reached its load's start: its schedule was written by then."""


class _NoLoad(stepper.StepSession):
    """A generator stopped at its start, before firing anything."""

    def start(self) -> float:
        raise _Started


def test_a_link_planted_at_a_steps_schedule_is_refused_and_its_target_untouched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT, encoding="utf-8")
    link = tmp_path / "steps" / "step-01" / SCHEDULE_FILE
    link.parent.mkdir(parents=True)
    link.symlink_to(victim)
    monkeypatch.setattr(stepper, "StepSession", lambda *a, **k: pytest.fail("a step's load was started"))
    with pytest.raises(LinkedOutputError, match=str(link)):
        _runner(tmp_path).run(20.0)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT and link.is_symlink()


def test_a_plain_step_folder_gets_the_whole_schedule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stepper, "StepSession", _NoLoad)
    with pytest.raises(_Started):
        _runner(tmp_path).run(20.0)
    path = tmp_path / "steps" / "step-01" / SCHEDULE_FILE
    written = pd.read_parquet(path)
    assert not path.is_symlink() and len(written) > 0 and written["offset_s"].is_monotonic_increasing
    assert sorted(p.name for p in path.parent.iterdir()) == [SCHEDULE_FILE]  # no temporary file left beside it
