"""The chaos timeline: offsets, validation, and real `chaos run` subprocesses started and stopped."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rushhour.scenarios.run.chaos.timeline import ChaosTimeline
from rushhour.scenarios.spec.chaos import PlannedFault, plan_faults
from rushhour.scenarios.spec.model import ChaosEntry, ScenarioError

EXPERIMENTS = Path(__file__).resolve().parents[4] / "experiments"


def _stand_in(tmp_path: Path, sleep_s: float) -> Path:
    """An experiment that holds a 'fault' with `sleep` and whose rollback writes a marker."""
    marker = tmp_path / "rolled-back.txt"
    script = "import os, sys; open(sys.argv[1], 'w').write(os.environ['RUSHHOUR_URL'])"
    experiment = {
        "version": "1.0.0",
        "title": "stand-in fault",
        "description": "sleeps as if a fault were held, rollback leaves a marker",
        "method": [
            {
                "type": "action",
                "name": "hold-the-fault",
                "provider": {"type": "process", "path": "sleep", "arguments": [str(sleep_s)]},
            }
        ],
        "rollbacks": [
            {
                "type": "action",
                "name": "write-marker",
                "provider": {
                    "type": "process",
                    "path": sys.executable,
                    "arguments": ["-c", script, str(marker)],
                },
            }
        ],
    }
    path = tmp_path / "stand-in.json"
    path.write_text(json.dumps(experiment))
    return path


def _faults(entries: list[ChaosEntry], duration_s: float = 3600.0) -> list[PlannedFault]:
    return plan_faults(entries, start_clock_s=20 * 3600, time_scale=60.0, duration_s=duration_s,
                       search_dirs=(EXPERIMENTS,), source="drill.yaml")


def _timeline(tmp_path: Path, entries: list[ChaosEntry], *, duration_s: float = 3600.0,
              **kw: Any) -> tuple[ChaosTimeline, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    options: dict[str, Any] = {
        "time_scale": 60.0,
        "start_clock_s": 20 * 3600,
        "out_dir": tmp_path / "chaos",
        "url": "http://127.0.0.1:9",
        "token": "t",
        "on_event": events.append,
        **kw,
    }
    return ChaosTimeline(_faults(entries, duration_s), **options), events


def test_plan_converts_scenario_time_to_wall_offsets(tmp_path: Path) -> None:
    entries = [
        ChaosEntry(at="20:10", experiment=("gpu-node-loss.json")),
        ChaosEntry(at="20:30", experiment=("gpu-node-loss.json")),
        ChaosEntry(at="20:01:30", experiment=str(EXPERIMENTS / "all-gpu-down.json"), name="total"),
    ]
    timeline, events = _timeline(tmp_path, entries, duration_s=60.0)
    plan = timeline.plan()
    assert [(p["name"], p["offset_s"], p["scenario_time"]) for p in plan] == [
        ("gpu-node-loss", 10.0, "20:10:00"),
        ("gpu-node-loss-2", 30.0, "20:30:00"),
        ("total", 1.5, "20:01:30"),
    ]
    assert plan[0]["targets"] == ["kill_node pool=quality"]
    assert plan[2]["targets"] == ["kill_pool pool=quality"]
    assert plan[0]["command"][-1] == str(EXPERIMENTS / "gpu-node-loss.json")
    assert "always" in plan[0]["command"]
    assert not (tmp_path / "chaos").exists() and events == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (ChaosEntry(at="20:05", experiment="missing.json"), 'chaos\\[1\\].experiment: no experiment file "missing.json"'),
    ],
)
def test_invalid_entries_are_named_in_the_error(entry: ChaosEntry, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        _faults([ChaosEntry(at="20:01", experiment="cache-flush.json"), entry], duration_s=60.0)


def test_entries_outside_the_run_are_planned_but_not_fired(tmp_path: Path) -> None:
    early, late, inside = (ChaosEntry(at=at, experiment="gpu-node-loss.json") for at in ("19:59", "21:01", "20:30"))
    planned = _faults([early, late, inside], duration_s=60.0)
    assert [f.in_run for f in planned] == [False, False, True]
    timeline, _ = _timeline(tmp_path, [early, late, inside], duration_s=60.0)
    assert [f.scenario_time for f in timeline.faults] == ["20:30:00"]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("at", "20h", "clock time"),
    ("name", "../../etc/escape", "should match pattern"),
    ("env", {"RUSHHOUR_URL": "http://elsewhere.invalid:8000"}, "the drill sets RUSHHOUR_URL itself"),
])
def test_chaos_entry_refuses_unsafe_fields(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChaosEntry(**{"at": "20:00", "experiment": "gpu-node-loss.json", field: value})


def test_invalid_experiment_file_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"title": "x", "method": [{"type": "action", "name": "n"}]}))
    with pytest.raises(ScenarioError, match="not a valid experiment"):
        _faults([ChaosEntry(at="20:00", experiment=str(bad))])


def test_a_malformed_experiment_file_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    with pytest.raises(ScenarioError, match="cannot be read"):
        _faults([ChaosEntry(at="20:00", experiment=str(bad))])


@pytest.mark.slow
def test_experiment_that_finishes_reports_start_and_end(tmp_path: Path) -> None:
    path = _stand_in(tmp_path, 0.1)
    timeline, events = _timeline(tmp_path, [ChaosEntry(at="20:00", experiment=str(path))])
    timeline.start(time.monotonic())
    deadline = time.monotonic() + 60
    while len(events) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    timeline.stop()
    assert [e["type"] for e in events] == ["fault_start", "fault_end"]
    assert events[1]["status"] == "completed" and events[1]["interrupted"] is False
    journal = json.loads((tmp_path / "chaos" / "stand-in.journal.json").read_text())
    assert journal["status"] == "completed"
    assert (tmp_path / "rolled-back.txt").read_text() == "http://127.0.0.1:9"
    assert timeline.reset_sent is False


@pytest.mark.slow
def test_stop_interrupts_a_running_experiment_and_its_rollbacks_still_run(tmp_path: Path) -> None:
    path = _stand_in(tmp_path, 300)
    timeline, events = _timeline(tmp_path, [ChaosEntry(at="20:00", experiment=str(path))])
    started = threading.Event()

    def on_event(event: dict[str, Any]) -> None:
        events.append(event)
        started.set()

    timeline._on_event = on_event
    timeline.start(time.monotonic())
    assert started.wait(30)
    log = tmp_path / "chaos" / "stand-in.log"
    deadline = time.monotonic() + 60
    while "hold-the-fault" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    timeline.stop()
    assert [e["type"] for e in events] == ["fault_start", "fault_end"]
    assert events[1]["interrupted"] is True
    journal = json.loads((tmp_path / "chaos" / "stand-in.journal.json").read_text())
    assert journal["status"] == "interrupted"
    assert [r["status"] for r in journal["rollbacks"]] == ["succeeded"]
    assert (tmp_path / "rolled-back.txt").exists()
    assert timeline.outcomes[0]["rolled_back"] is True
    assert timeline.reset_sent is False


def test_stop_before_the_entry_is_due_launches_nothing(tmp_path: Path) -> None:
    timeline, events = _timeline(tmp_path, [ChaosEntry(at="20:59", experiment=("cache-flush.json"))])
    timeline.start(time.monotonic())
    timeline.stop()
    assert events == [] and timeline.outcomes == []


HARNESS = """
import sys, time
from pathlib import Path
from rushhour.scenarios.run.chaos.timeline import ChaosTimeline
from rushhour.scenarios.spec.chaos import PlannedFault

fault = PlannedFault(name="stand-in", experiment=Path(sys.argv[1]), scenario_time="20:00:00", offset_s=0.0, targets=[])
def say(event):
    print(event["type"], event.get("pid"), flush=True)
timeline = ChaosTimeline([fault], time_scale=1.0, start_clock_s=0.0, out_dir=Path(sys.argv[2]),
                         url="http://127.0.0.1:9", token="t", on_event=say)
timeline.start(time.monotonic())
time.sleep(600)
"""


@pytest.mark.slow
def test_a_running_experiment_outlives_its_scheduler_but_not_the_drill(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess

    import psutil

    path = _stand_in(tmp_path, 300)
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(path), str(tmp_path / "chaos")],
                               stdout=subprocess.PIPE, text=True, cwd=EXPERIMENTS.parent)
    chaos: psutil.Process | None = None
    try:
        line = harness.stdout.readline() if harness.stdout else ""
        assert line.startswith("fault_start"), line
        chaos = psutil.Process(int(line.split()[1]))
        log = tmp_path / "chaos" / "stand-in.log"
        deadline = time.monotonic() + 60
        while "hold-the-fault" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.0)  # the scheduler has nothing left to launch: its thread must not end yet
        assert chaos.is_running() and not (tmp_path / "rolled-back.txt").exists()
        os.kill(harness.pid, signal.SIGKILL)  # the drill dies without any teardown
        harness.wait(timeout=10)
        chaos.wait(timeout=30)  # the parent-death signal interrupted the run ...
        assert (tmp_path / "rolled-back.txt").exists()  # ... and its rollbacks played
        assert json.loads((tmp_path / "chaos" / "stand-in.journal.json").read_text())["status"] == "interrupted"
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        if chaos is not None and chaos.is_running():  # the run and its `sleep` share its session
            os.killpg(chaos.pid, signal.SIGKILL)
