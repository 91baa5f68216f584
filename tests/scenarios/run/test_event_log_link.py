"""A planted link: the run's timeline is never appended to a file it points at."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.scenarios.run.events import EventLog


def test_event_log_refuses_a_linked_timeline_and_leaves_the_target_alone(tmp_path: Path) -> None:
    victim = tmp_path / "notes.txt"
    victim.write_text("mine\n")
    (tmp_path / "events.jsonl").symlink_to(victim)
    with pytest.raises(OSError):
        EventLog(tmp_path / "events.jsonl")
    assert victim.read_text() == "mine\n"


def test_event_log_appends_to_a_plain_file(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", origin=0.0)
    log.emit("run_start", t_s=0.0)
    log.close()
    assert '"type": "run_start"' in (tmp_path / "events.jsonl").read_text()
