"""The chaos timeline: offsets, validation, and real `chaos run` subprocesses started and stopped."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from experiments.timeline import ChaosEntry, ChaosTimeline, TimelineError

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


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


def _timeline(tmp_path: Path, entries: list[ChaosEntry], **kw: Any) -> tuple[ChaosTimeline, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    options: dict[str, Any] = {
        "time_scale": 60.0,
        "start_clock_s": 20 * 3600,
        "out_dir": tmp_path / "chaos",
        "url": "http://127.0.0.1:9",
        "token": "t",
        "on_event": events.append,
        "base_dir": EXPERIMENTS,
        **kw,
    }
    return ChaosTimeline(entries, **options), events


def test_plan_converts_scenario_time_to_wall_offsets(tmp_path: Path) -> None:
    entries = [
        ChaosEntry(at="20:10", experiment=Path("gpu-node-loss.json")),
        ChaosEntry(at="20:30", experiment=Path("gpu-node-loss.json")),
        ChaosEntry(at=20 * 3600 + 90, experiment=EXPERIMENTS / "all-gpu-down.json", name="total"),
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
        (ChaosEntry(at="19:59", experiment=Path("gpu-node-loss.json")), "before the run starts"),
        (ChaosEntry(at="21:01", experiment=Path("gpu-node-loss.json")), "after the run ends"),
        (ChaosEntry(at="20h", experiment=Path("gpu-node-loss.json")), "Clock time"),
        (ChaosEntry(at="20:05", experiment=Path("missing.json")), "does not exist"),
    ],
)
def test_invalid_entries_are_named_in_the_error(tmp_path: Path, entry: ChaosEntry, message: str) -> None:
    with pytest.raises(TimelineError, match=message) as caught:
        _timeline(tmp_path, [ChaosEntry(at="20:01", experiment=Path("cache-flush.json")), entry], duration_s=60.0)
    assert "chaos entry 1" in str(caught.value)


def test_invalid_experiment_file_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"title": "x", "method": [{"type": "action", "name": "n"}]}))
    with pytest.raises(TimelineError, match="not a valid experiment"):
        _timeline(tmp_path, [ChaosEntry(at="20:00", experiment=bad)])


def test_experiment_that_finishes_reports_start_and_end(tmp_path: Path) -> None:
    path = _stand_in(tmp_path, 0.1)
    timeline, events = _timeline(tmp_path, [ChaosEntry(at=20 * 3600, experiment=path)])
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


def test_stop_interrupts_a_running_experiment_and_its_rollbacks_still_run(tmp_path: Path) -> None:
    path = _stand_in(tmp_path, 300)
    timeline, events = _timeline(tmp_path, [ChaosEntry(at=20 * 3600, experiment=path)])
    started = threading.Event()
    timeline._on_event = lambda e: (events.append(e), started.set())  # type: ignore[method-assign]
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
    timeline, events = _timeline(tmp_path, [ChaosEntry(at="20:59", experiment=Path("cache-flush.json"))])
    timeline.start(time.monotonic())
    timeline.stop()
    assert events == [] and timeline.outcomes == []
