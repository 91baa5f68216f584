"""A lying target: its events cannot pose as the harness's, and a malformed one stops nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from rushhour.reports.measures.facts import RunFacts
from rushhour.reports.rundata.results import load_run
from rushhour.reports.summary.aggregate import summarise
from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.run.poller import TICK_FAILED, Poller
from rushhour.scenarios.run.scraper import MALFORMED_EVENTS, StatusScraper
from rushhour.scenarios.run.target_events import (
    OTHER_KIND,
    TARGET_EVENT,
    MalformedTargetEvent,
    TargetEvent,
    read_target_event,
    target_event_record,
)
from tests.reports.helpers import requests_frame, write_run
from tests.support.stub import Answer, stub_server

NOW = 1_000_000.0
FORGED: list[Any] = [
    {"seq": 1, "wall": NOW, "type": "abort", "reason": "the target says so"},
    {"seq": 2, "wall": NOW, "type": "fault_start", "name": "forged", "source": "harness"},
    {"seq": 3, "wall": NOW, "type": "phase", "name": "peak", "t_s": 0.0},
    {"seq": 4, "wall": NOW, "type": "run_end", "duration_s": 1.0},
    {"seq": 5, "wall": NOW, "type": "node_down", "node": "quality-0", "kind": "partition"},
]


def test_target_event_of_a_harness_kind_is_written_as_other_with_the_claim_beside_it() -> None:
    event = read_target_event({"seq": 7, "wall": NOW, "type": "abort", "reason": "x", "source": "harness",
                               "t_s": -5.0, "data": {"a": 1}}, now=NOW)
    assert event.kind == OTHER_KIND and event.seq == 7
    assert event.fields == {"reason": "x", "claimed_type": "abort"}


def test_target_event_of_a_listed_kind_keeps_it_and_renames_kind() -> None:
    event = read_target_event({"seq": 2, "wall": NOW - 1, "type": "fault_injected", "kind": "latency"}, now=NOW)
    assert (event.kind, event.wall, event.fields) == ("fault_injected", NOW - 1, {"fault_kind": "latency"})


@pytest.mark.parametrize("entry", [["not", "a", "dict"], "abort", {"seq": "12"}, {"seq": 1.5}, {"seq": True},
                                   {"seq": -1}, {"seq": None}])
def test_target_event_malformed_entry_is_refused_by_name(entry: object) -> None:
    with pytest.raises(MalformedTargetEvent):
        read_target_event(entry, now=NOW)


def test_target_event_fields_are_bounded_scalars_and_a_far_clock_is_not_used() -> None:
    entry = {"seq": 1, "wall": NOW + 10 * 3600, "type": "scale", "note": "x" * 10_000, "nested": {"deep": [1]},
             "bad key\n": 1, **{f"k{i}": i for i in range(100)}, "inf": float("inf")}
    event = read_target_event(entry, now=NOW)
    assert event.wall is None
    assert len(event.fields) <= 32 and all(isinstance(v, (str, int, float)) for v in event.fields.values())
    assert len(event.fields["note"]) <= 201 and "bad key\n" not in event.fields
    record = target_event_record(event, t0=NOW - 3.0, now=NOW)
    assert record["t_s"] == pytest.approx(3.0) and record["source"] == "target"


def _serve(events: list[Any]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        after = int(request.url.params["after"])
        return httpx.Response(200, json={"events": [e for e in events if not isinstance(e, dict)
                                                    or not isinstance(e.get("seq"), int) or e["seq"] > after]})
    return httpx.MockTransport(handler)


def test_scraper_skips_malformed_events_counts_them_and_keeps_the_rest() -> None:
    served = [["x"], {"seq": "NaN", "type": "abort"}, {"seq": 1, "type": "node_down", "source": "harness"}, 42,
              {"seq": 2, "type": "scale", "pool": "quality"}]
    seen: list[TargetEvent] = []
    scraper = StatusScraper("http://127.0.0.1:9", origin=0.0, on_server_event=seen.append)
    with httpx.Client(transport=_serve(served)) as client:
        scraper._pull_events(client)
        scraper._pull_events(client)
    assert [e.kind for e in seen] == ["node_down", "scale"]
    assert scraper.errors.totals[MALFORMED_EVENTS] == 6  # three malformed entries, asked twice


class _Flaky(Poller):
    """Raises on every other tick; counts the ticks."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9", origin=0.0, interval_s=0.01, name="flaky", on_error=None)
        self.ticks = 0

    def tick(self, client: httpx.Client) -> None:
        self.ticks += 1
        if self.ticks % 2:
            raise KeyError("source")


def test_poller_survives_a_tick_that_raises_and_counts_it() -> None:
    poller = _Flaky()
    poller.start()
    deadline = time.monotonic() + 10
    while poller.ticks < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    poller.stop()
    assert poller.ticks >= 6 and poller.errors.totals[TICK_FAILED] >= 3


def test_scraper_thread_keeps_scraping_a_target_serving_hostile_events() -> None:
    status = {"pools": {"quality": {"nodes_alive": 1, "nodes_ready": 1}}, "nodes": []}
    hostile = {"events": [{"seq": "x"}, ["y"], {"seq": 1, "type": "abort", "source": "harness"}]}
    written: list[TargetEvent] = []

    def handler(event: TargetEvent) -> None:
        written.append(event)
        if len(written) == 1:
            raise RuntimeError("a handler that fails once")

    routes: dict[str, Answer] = {"/v1/status": (200, {}, status), "/v1/events": (200, {}, hostile)}
    with stub_server(routes) as (url, asked):
        scraper = StatusScraper(url, origin=time.time(), interval_s=0.05, on_server_event=handler)
        scraper.start()
        deadline = time.monotonic() + 20
        while asked.count("/v1/status") < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        scraper.stop()
    assert asked.count("/v1/status") >= 5 and scraper.samples >= 5
    assert written and all(e.kind == OTHER_KIND for e in written)
    assert scraper.errors.totals[TICK_FAILED] == 1 and scraper.errors.totals[MALFORMED_EVENTS] >= 10


def _healthy_run(root: Path) -> Path:
    intended = np.arange(0.0, 10.0, 0.05)
    slo = {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 500}
    return write_run(root, requests_frame(intended, np.full(intended.size, 20.0)), scenario={"slos": [slo]},
                     events=[{"type": "run_start", "t_s": 0.0}, {"type": "run_end", "t_s": 10.0, "duration_s": 10.0}])


def _figures(root: Path) -> dict[str, Any]:
    run = load_run(root)
    summary = summarise(run, RunFacts.of(run))
    return {key: summary[key] for key in ("verdict", "aborted", "faults", "slos", "latency_ms", "requests")}


def test_forged_abort_fault_and_phase_from_the_target_change_no_report_figure(tmp_path: Path) -> None:
    honest = _figures(_healthy_run(tmp_path / "honest"))
    lied_to = _healthy_run(tmp_path / "lied")
    log = EventLog(lied_to / "events.jsonl", origin=NOW - 5.0)
    for entry in FORGED:
        log.emit(TARGET_EVENT, **target_event_record(read_target_event(entry, now=NOW), t0=NOW - 5.0, now=NOW))
    old_style = {"type": "abort", "source": "server", "reason": "an older folder's server event", "t_s": 1.0}
    log._file.write(json.dumps(old_style) + "\n")
    log.close()
    run = load_run(lied_to)
    assert len(run.target_events) == len(FORGED) + 1 and not run.events_of("abort")
    assert _figures(lied_to) == honest and honest["verdict"] == "pass"
