"""summary.json's environment, leak audit and scraper sections are typed: what the drill's own
producers record reaches the summary unchanged (keys, order, values) and reads back the same,
and a misspelt field or a value of the wrong type is refused naming its path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from rushhour.experiments.leases import default_lease_s
from rushhour.kernel.atomic import write_json_atomic
from rushhour.reports.build import summarise_run
from rushhour.reports.measures.facts import RunFacts
from rushhour.reports.rundata.results import RunData, load_run
from rushhour.reports.summary.aggregate import summarise
from rushhour.reports.summary.harness_section import LeakAuditEvent, LeakAuditRecord
from rushhour.reports.summary.model import Summary
from rushhour.scenarios.run.audit.leakaudit import AUDIT_FILE, Finding, LeakAudit
from rushhour.scenarios.run.envinfo import machine_facts
from rushhour.scenarios.run.events import EventLog
from rushhour.scenarios.run.scraper import StatusScraper
from tests.reports.helpers import requests_frame, write_run

HARNESS = ("environment", "leak_audit", "scraper")


def _recorded_run(tmp_path: Path, *, audit_event: bool = True) -> RunData:
    """A run whose events are written the way the drill writes them: run_start with this machine's
    facts, the scraper's rate-limited errors and its totals, the leak audit (file and event)."""
    root = write_run(tmp_path / "run", requests_frame(np.arange(8.0), np.full(8, 50.0)))
    log = EventLog(root / "events.jsonl", origin=0.0)
    log.emit("run_start", t_s=0.0, scenario="fixture", seed=1, target="http://127.0.0.1:9", processes=1,
             time_scale=1.0, rate_scale=1.0, start_clock_s=0.0, env=machine_facts(), fault_lease_s=default_lease_s())

    def said(error: dict[str, object]) -> None:  # as the drill reports a scraper's error
        log.emit("scraper_error", source="harness", **error)

    scraper = StatusScraper("http://127.0.0.1:9", origin=0.0, on_error=said)
    for _ in range(3):
        scraper.errors.failed("/v1/events", "GET http://127.0.0.1:9/v1/events answered 500 ('boom').")
    scraper.errors.flush()
    log.emit("scraper", source="harness", **scraper.summary())
    audit = LeakAudit()
    audit.add("target", [Finding("fault", "quality-1", "a partition fault is still active.")])
    audit.skip("kubernetes", "the scenario names no namespace")
    audit.actions.append("POST /admin/reset")
    result = audit.result(9.5)
    write_json_atomic(result, root / AUDIT_FILE)
    if audit_event:
        log.emit("leak_audit", **{k: v for k, v in result.items() if k != "t_s"})
    log.emit("run_end", t_s=10.0, duration_s=10.0)
    log.close()
    return load_run(root)


def _parts(run: RunData) -> dict[str, Any]:
    return summarise_run(run, RunFacts.of(run)).as_dict()


@pytest.mark.parametrize("audit_event", [True, False])
def test_recorded_sections_reach_the_summary_unchanged_and_read_back_the_same(tmp_path: Path,
                                                                              audit_event: bool) -> None:
    run = _recorded_run(tmp_path, audit_event=audit_event)
    typed = summarise_run(run, RunFacts.of(run))
    said = summarise(run, RunFacts.of(run))
    parts = typed.as_dict()
    for name in HARNESS:  # same keys, order, values
        assert json.dumps(parts[name]) == json.dumps(said[name]), name
    assert parts["environment"]["packages"]["pydantic"] and parts["environment"]["fault_lease_s"] == default_lease_s()
    assert isinstance(typed.leak_audit, LeakAuditEvent if audit_event else LeakAuditRecord)
    assert list(parts["leak_audit"])[-1] == ("actions" if audit_event else "t_s")
    assert parts["scraper"]["errors"] == {"/v1/events": 3} and parts["scraper"]["error_events"] == 2
    text = json.dumps(parts)  # summary.json read back validates to the same document
    assert json.dumps(Summary.model_validate(json.loads(text)).as_dict()) == text


def test_an_unrecorded_environment_reads_unknown_and_no_checks_read_none(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "run", requests_frame(np.arange(4.0), np.full(4, 50.0)), events=[]))
    parts = _parts(run)
    assert parts["environment"]["cpu_cores"] == "unknown" and parts["environment"]["seed"] == 1
    assert parts["leak_audit"] is None and parts["scraper"] is None


@pytest.mark.parametrize(("section", "change", "path"), [
    ("environment", {"gpuu": "none"}, r"environment\.gpuu"),
    ("environment", {"cpu_cores": "many"}, r"environment\.cpu_cores"),
    ("environment", {"packages": {"numpy": 2}}, r"environment\.packages\.[^\n]*numpy"),
    ("scraper", {"faild": 3}, r"scraper\.faild"),
    ("scraper", {"errors": {"/v1/events": "three"}}, r"scraper\.errors\./v1/events"),
    ("scraper", {"first_error": {"endpoint": "/v1/status", "reason": "x", "t_s": 1.0, "seq": 4}},
     r"scraper\.first_error\.seq"),
])
def test_a_misspelt_or_mistyped_field_is_refused_naming_its_path(tmp_path: Path, section: str,
                                                                  change: dict[str, Any], path: str) -> None:
    parts = _parts(_recorded_run(tmp_path))
    with pytest.raises(ValidationError, match=path):
        Summary.model_validate({**parts, section: {**parts[section], **change}})


@pytest.mark.parametrize("audit_event", [True, False])
def test_a_misspelt_leak_audit_field_is_refused_naming_its_shape_and_path(tmp_path: Path, audit_event: bool) -> None:
    parts = _parts(_recorded_run(tmp_path, audit_event=audit_event))
    audit, shape = parts["leak_audit"], "event" if audit_event else "record"
    wrong = {**audit, "findings": [{**audit["findings"][0], "detial": "x"}]}
    with pytest.raises(ValidationError, match=rf"leak_audit\.{shape}\.findings\.0\.detial"):
        Summary.model_validate({**parts, "leak_audit": wrong})
    with pytest.raises(ValidationError, match=rf"leak_audit\.{shape}\.clean"):
        Summary.model_validate({**parts, "leak_audit": {**audit, "clean": "mostly"}})
