"""The live state's fault marks, read from events.jsonl as it grows, through the event models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rushhour.kernel.events import FaultEnd, FaultStart
from rushhour.scenarios.cli.run import prepare
from rushhour.scenarios.run.live.state import EventTail, LiveState
from rushhour.scenarios.spec.plan import Overrides


def _line(**event: object) -> str:
    return json.dumps(event) + "\n"


def test_event_tail_reads_complete_lines_as_typed_events_and_numbers_refused_ones_across_reads(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    tail = EventTail(path)
    assert tail.read() == []  # no file yet
    path.write_text(_line(type="run_start", t_s=0.0) + _line(type="fault_start", name="kill") + '{"type": "fault_e')
    first = tail.read()
    assert [e.type for e in first] == ["run_start"] and [r.line for r in tail.refused] == [2]
    with path.open("a") as handle:
        handle.write('nd", "t_s": 4.0, "name": "kill"}\n' + "not json\n" + _line(type="fault_start", t_s=5.0, name="x"))
    second = tail.read()
    assert [type(e) for e in second] == [FaultEnd, FaultStart]
    assert [(r.line, r.json) for r in tail.refused] == [(2, True), (4, False)]


@pytest.fixture()
def state(tmp_path: Path) -> LiveState:
    plan = prepare("scenarios/smoke.yaml", Overrides(), allow_remote=False)
    plan.schedule.to_parquet(tmp_path / "schedule.parquet", index=False)
    return LiveState(plan, tmp_path)


def test_live_state_holds_a_fault_from_its_start_to_its_end_and_ignores_refused_marks(state: LiveState,
                                                                                        tmp_path: Path) -> None:
    name = "kill"
    state.faults = {name: None}  # as the plan of a scenario with one fault in the run fills it
    path = tmp_path / "events.jsonl"
    path.write_text(_line(type="fault_start", name=name) + _line(type="target_event", name=name)
                    + _line(type="fault_start", t_s=3.5, name=name) + _line(type="fault_start", t_s=1.0, name="other"))
    state.read_events()
    assert state.faults == {name: 3.5}
    with path.open("a") as handle:
        handle.write(_line(type="fault_end", t_s="later", name=name))
    state.read_events()
    assert state.faults == {name: 3.5}  # a malformed end does not end it
    with path.open("a") as handle:
        handle.write(_line(type="fault_end", t_s=7.0, name=name))
    state.read_events()
    assert state.faults == {name: None}
    assert [r.line for r in state.refused_events] == [1, 2, 5]
