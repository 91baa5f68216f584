"""Lines of events.jsonl the event models refuse are counted where a drill's watchers look: the
harness's metrics endpoint and the terminal view.

The user's case: a fault mark written wrong (or a line posing as one) is left out of the fault
gauge; whoever watches the drill sees that lines were refused instead of a silent gap.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rushhour.scenarios.cli.run import prepare
from rushhour.scenarios.run.live.metrics import DrillCollector
from rushhour.scenarios.run.live.state import LiveState
from rushhour.scenarios.run.live.view import render_view
from rushhour.scenarios.spec.plan import Overrides


@pytest.fixture()
def state(tmp_path: Path) -> LiveState:
    plan = prepare("scenarios/smoke.yaml", Overrides(), allow_remote=False)
    plan.schedule.to_parquet(tmp_path / "schedule.parquet", index=False)
    live = LiveState(plan, tmp_path)
    live.begin(time.time() - 2.0, "http://127.0.0.1:8123")
    return live


def _refused_total(state: LiveState) -> float:
    registry = CollectorRegistry()
    registry.register(DrillCollector(state))
    text = generate_latest(registry).decode()
    return next(s.value for family in text_string_to_metric_families(text) for s in family.samples
                if s.name == "rushhour_drill_refused_events_total")


def test_refused_lines_are_counted_at_scrape_time_and_shown_in_the_view(state: LiveState, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps({"type": "run_start", "t_s": 0.0}) + "\n")
    assert _refused_total(state) == 0.0
    assert not any("refused" in line for line in render_view(state))
    with path.open("a") as handle:
        handle.write(json.dumps({"type": "fault_end", "t_s": "later", "name": "kill"}) + "\n"
                     + "not json\n" + json.dumps({"type": "fault_start", "t_s": 1.0, "name": "x"}) + "\n")
    assert _refused_total(state) == 2.0  # the scrape reads the lines appended since the last read
    shown = [line for line in render_view(state) if "refused" in line]
    assert shown == ["events   2 line(s) of events.jsonl refused, left out (last: line 3)"]
