"""`rushhour report DIR` on a run whose harness was killed: results rebuilt from what was written."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from rushhour.kernel.processes import stop_process
from rushhour.scenarios.cli.report import report
from rushhour.scenarios.run.audit.ledger import ProcessLedger
from rushhour.scenarios.run.rebuild import events_so_far, needs_rebuild, rebuild_results
from rushhour.scenarios.spec.model import dump_scenario, load_scenario, resolve_path


def _killed_run(root: Path, schedule: pd.DataFrame, answered: int) -> None:
    """A results folder as a SIGKILLed drill leaves it: inputs, a started timeline, two parts."""
    root.mkdir()
    (root / "scenario.yaml").write_text(dump_scenario(load_scenario(resolve_path("smoke")), rate_scale=1.0))
    schedule.to_parquet(root / "schedule.parquet", index=False)
    parts = root / "load" / "parts"
    parts.mkdir(parents=True)
    for seq, rows in enumerate(np.array_split(np.arange(answered), 2)):
        intended = schedule["offset_s"].to_numpy()[rows]
        pd.DataFrame({
            "row": rows, "intended_s": intended, "sent_s": intended + 0.001, "done_s": intended + 0.05,
            "status": 200, "error": "", "model": "fast", "cached": False, "degraded": False, "node": "fast-0",
            "first_segment_s": np.nan, "via": "translate",
        }).to_parquet(parts / f"part-w000-{seq:06d}.parquet", index=False)
    (parts / "part-w000-000002.tmp").write_bytes(b"half a file")  # cut short by the kill: ignored
    start = {"type": "run_start", "t_s": 0.0, "wall": "2026-12-01T00:00:00.000Z", "scenario": "smoke"}
    (root / "events.jsonl").write_text(json.dumps(start) + "\n" + '{"type": "fault_sta')


@pytest.mark.slow
def test_report_rebuilds_a_killed_run_and_calls_it_invalid(tmp_path: Path, make_schedule: Callable[..., pd.DataFrame]) -> None:
    schedule = make_schedule(3.0, 10.0)
    root = tmp_path / "killed"
    _killed_run(root, schedule, answered=12)
    assert needs_rebuild(root)
    result = CliRunner().invoke(report, [str(root)])
    assert result.exit_code == 3, result.output
    assert "rebuilt the results of an interrupted run: 12 answered request(s) from 2 part file(s)" in result.output
    requests = pd.read_parquet(root / "requests.parquet")
    assert len(requests) == len(schedule) and int(requests["ok"].sum()) == 12
    assert set(requests.loc[~requests["ok"], "error"]) == {"not sent"}
    summary = json.loads((root / "summary.json").read_text())
    assert summary["verdict"] == "invalid" and "rebuilt them from 2 part file(s)" in summary["verdict_reason"]
    assert (root / "report.html").is_file() and (root / "server_metrics.parquet").is_file()
    events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines() if line.endswith("}")]
    assert [e["type"] for e in events][-3:] == ["abort", "leak_audit", "run_end"]
    assert events[-1]["interrupted"] is True and events[-1]["rebuilt"] is True
    audit = json.loads((root / "leak_audit.json").read_text())
    assert [s["check"] for s in audit["skipped"]] == ["target", "processes"]
    assert not needs_rebuild(root)  # a second report just renders
    assert CliRunner().invoke(report, [str(root)]).exit_code == 3
    assert len(pd.read_parquet(root / "requests.parquet")) == len(schedule)


@pytest.mark.slow
def test_rebuild_reports_processes_of_the_run_still_alive(tmp_path: Path, make_schedule: Callable[..., pd.DataFrame]) -> None:
    root = tmp_path / "killed"
    _killed_run(root, make_schedule(2.0, 5.0), answered=4)
    leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ProcessLedger(root / "processes.json").observe()
        rebuilt = rebuild_results(root)
        assert rebuilt is not None and rebuilt.survivors >= 1
        audit = json.loads((root / "leak_audit.json").read_text())
        assert audit["clean"] is False
        assert any(f["kind"] == "process" and f["target"] == str(leftover.pid) for f in audit["findings"])
    finally:
        stop_process(leftover, grace_s=2)


def test_finished_run_is_never_rebuilt(tmp_path: Path) -> None:
    (tmp_path / "schedule.parquet").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text('{"type": "run_end", "t_s": 3.0, "duration_s": 3.0}\n')
    assert not needs_rebuild(tmp_path) and rebuild_results(tmp_path) is None
    assert not needs_rebuild(tmp_path / "nothing-here")


@pytest.mark.slow
def test_report_rebuilds_a_killed_ab_run_as_an_ab_run_and_calls_it_invalid(
        tmp_path: Path, make_schedule: Callable[..., pd.DataFrame]) -> None:
    from rushhour.scenarios.ab.trials import TrialDesign

    design = TrialDesign.build(4.0, 8, 5)
    schedule = make_schedule(10.0, 4.0)
    trial = (schedule["offset_s"].to_numpy() // design.trial_s).astype("int64")
    schedule = schedule.assign(trial=trial, arm=np.array(design.arms, dtype=object)[trial])
    root = tmp_path / "killed-ab"
    _killed_run(root, schedule, answered=20)
    ab_event = {"type": "ab", "t_s": 0.0, "threshold": 1.1, "confidence": 0.9, "design": design.as_dict(),
                "targets": {"baseline": "http://127.0.0.1:1", "candidate": "http://127.0.0.1:2"}}
    events = (root / "events.jsonl").read_text().split("\n")
    (root / "events.jsonl").write_text("\n".join([events[0], json.dumps(ab_event), events[1]]))
    result = CliRunner().invoke(report, [str(root)])
    assert result.exit_code == 3, result.output
    assert "rebuilt the results of an interrupted run: 20 answered request(s)" in result.output
    requests = pd.read_parquet(root / "requests.parquet")
    assert requests["arm"].tolist() == schedule["arm"].tolist()
    assert requests["trial"].tolist() == schedule["trial"].tolist()
    doc = json.loads((root / "ab.json").read_text())
    assert doc["exit_code"] == 3 and any("rebuilt them from 2 part file(s)" in reason for reason in doc["aborted"])
    assert not (root / "summary.json").exists()  # judged as the A/B run it was, not as a drill


def test_events_so_far_reads_through_the_event_models_leaving_out_what_they_refuse(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"type": "run_start", "t_s": 0.0}\n{"type": "run_end", "duration_s": "ten seconds"}\n'
                    '{"type": "run_finished", "t_s": 9.0}\n[1]\n{"type": "fault_start", "t_s": 2.0, "name": "kill"}\n'
                    '{"type": "fault_sta')
    assert [e["type"] for e in events_so_far(path)] == ["run_start", "fault_start"]
    (tmp_path / "schedule.parquet").write_bytes(b"")
    assert needs_rebuild(tmp_path)  # a malformed run_end is no run_end
