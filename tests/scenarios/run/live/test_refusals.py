"""What the target and the cluster send that a drill does not take is counted where its watchers
look, while it runs: the harness's metrics endpoint.

The attack: a target answers `/v1/events` with an `abort` and a `fault_start` of its own, an entry
that is not an object and one whose `seq` is not a number; across hosts a stranger's messages are
dropped and its node refused. Each is written the way the drill writes it (the scraper's reader,
the drill's event log, the master's rejections file), and a scrape counts each, by kind.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rushhour.scenarios.cli.run import prepare
from rushhour.scenarios.generator.master_relay import REJECTIONS_FILE
from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.run.live.metrics import DrillCollector
from rushhour.scenarios.run.live.state import LiveState
from rushhour.scenarios.run.poller import ErrorReporter
from rushhour.scenarios.run.scraper import MALFORMED_EVENTS
from rushhour.scenarios.run.target_events import (
    TARGET_EVENT,
    MalformedTargetEvent,
    read_target_event,
    target_event_record,
)
from rushhour.scenarios.spec.plan import Overrides

HOSTILE: list[object] = [{"seq": 1, "type": "abort", "reason": "forged"}, {"seq": 2, "type": "fault_start", "name": "kill"},
           {"seq": 3, "type": "node_down", "node": "quality-0"}, ["not", "an", "object"], {"seq": "x", "type": "scale"}]


@pytest.fixture()
def state(tmp_path: Path) -> LiveState:
    plan = prepare("scenarios/smoke.yaml", Overrides(), allow_remote=False)
    plan.schedule.to_parquet(tmp_path / "schedule.parquet", index=False)
    (tmp_path / "control").mkdir()
    live = LiveState(plan, tmp_path)
    live.begin(time.time() - 2.0, "http://127.0.0.1:8123", tmp_path / "control")
    return live


def _scrape(state: LiveState) -> dict[tuple[str, str], float]:
    registry = CollectorRegistry()
    registry.register(DrillCollector(state))
    families = text_string_to_metric_families(generate_latest(registry).decode())
    return {(s.name, s.labels.get("kind", "")): s.value for f in families for s in f.samples}


def _drill_writes(entries: list[object], log: EventLog) -> None:
    """What the drill's scraper and event log write for a target's event list."""
    def report(error: dict[str, object]) -> None:
        log.emit("scraper_error", source="harness", **error)

    errors = ErrorReporter(report, every_s=0.0)
    now = time.time()
    for entry in entries:
        try:
            event = read_target_event(entry, now=now)
        except MalformedTargetEvent as exc:
            errors.failed(MALFORMED_EVENTS, f"a malformed event: {exc}")
            continue
        log.emit(TARGET_EVENT, **target_event_record(event, t0=now - 2.0, now=now))


def test_forged_and_malformed_target_events_are_counted_by_kind(state: LiveState, tmp_path: Path) -> None:
    before = _scrape(state)
    assert before[("rushhour_drill_target_events_total", "other")] == 0.0
    assert before[("rushhour_drill_target_events_malformed_total", "")] == 0.0
    _drill_writes(HOSTILE, EventLog(tmp_path / "events.jsonl", origin=time.time()))
    after = _scrape(state)
    assert after[("rushhour_drill_target_events_total", "other")] == 2.0  # the abort and the fault_start
    assert after[("rushhour_drill_target_events_total", "node_down")] == 1.0
    assert after[("rushhour_drill_target_events_malformed_total", "")] == 2.0
    assert after[("rushhour_drill_refused_events_total", "")] == 0.0  # the harness's own lines are whole
    assert state.faults == {f.name: None for f in state.plan.chaos if f.in_run}  # no fault mark taken from it


def test_cluster_rejections_are_read_while_the_drill_runs(state: LiveState, tmp_path: Path) -> None:
    rejections = tmp_path / "control" / REJECTIONS_FILE
    rejections.write_text(json.dumps({"dropped": {"malformed": 2, "quit": 1}, "refused": []}))
    first = _scrape(state)
    assert first[("rushhour_drill_cluster_dropped_messages_total", "")] == 3.0
    assert first[("rushhour_drill_cluster_refused_nodes_total", "")] == 0.0
    rejections.write_text(json.dumps({"dropped": {"malformed": 2, "quit": 1, "rh_hello": 4},
                                      "refused": ["the cluster secret did not match"]}))
    second = _scrape(state)
    assert second[("rushhour_drill_cluster_dropped_messages_total", "")] == 7.0
    assert second[("rushhour_drill_cluster_refused_nodes_total", "")] == 1.0


def test_a_torn_rejections_file_keeps_the_last_counts(state: LiveState, tmp_path: Path) -> None:
    rejections = tmp_path / "control" / REJECTIONS_FILE
    rejections.write_text(json.dumps({"dropped": {"rh_part": 5}, "refused": ["x", "y"]}))
    _scrape(state)
    rejections.write_text('{"dropped": {"rh_pa')
    counts = _scrape(state)
    assert counts[("rushhour_drill_cluster_dropped_messages_total", "")] == 5.0
    assert counts[("rushhour_drill_cluster_refused_nodes_total", "")] == 2.0


def test_the_final_cluster_rejections_event_is_counted_as_written(state: LiveState, tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", origin=time.time())
    log.emit("cluster_rejections", source="harness", dropped={"quit": 2, "exception": 1}, refused=["wrong secret"])
    counts = _scrape(state)
    assert counts[("rushhour_drill_cluster_dropped_messages_total", "")] == 3.0
    assert counts[("rushhour_drill_cluster_refused_nodes_total", "")] == 1.0
