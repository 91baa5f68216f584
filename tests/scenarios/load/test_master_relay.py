"""The Locust master's relay turns workers' messages into the runner's control and part files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import pandas as pd

from scenarios.load.clocksync import software_version
from scenarios.load.master_relay import (
    MSG_CONFIG,
    MSG_DONE,
    MSG_HELLO,
    MSG_PART,
    MSG_READY,
    MSG_REFUSED,
    MSG_START,
    STATE_MISSING,
    MasterRelay,
    refusal,
)
from scenarios.load.worker import WorkerConfig, publish_start


@dataclass
class Msg:
    data: Any
    node_id: str


@dataclass
class Client:
    state: str = "running"


@dataclass
class FakeRunner:
    """Just what the relay uses of Locust's MasterRunner."""

    handlers: dict[str, Any] = field(default_factory=dict)
    sent: list[tuple[str, Any, str | None]] = field(default_factory=list)
    clients: dict[str, Client] = field(default_factory=dict)

    def register_message(self, name: str, handler: Any) -> None:
        self.handlers[name] = handler

    def send_message(self, name: str, data: Any = None, client_id: str | None = None) -> None:
        self.sent.append((name, data, client_id))

    def get_worker_index(self, node_id: str) -> int:
        return int(node_id[-1])

    def say(self, name: str, data: Any, node_id: str) -> None:
        self.clients.setdefault(node_id, Client())
        self.handlers[name](environment=None, msg=Msg(data, node_id))


def _relay(tmp_path: Path) -> tuple[MasterRelay, FakeRunner, Path]:
    pd.DataFrame({"offset_s": [0.0, 0.1, 0.2]}).to_parquet(tmp_path / "schedule.parquet")
    for folder in ("control", "parts"):
        (tmp_path / folder).mkdir()
    config = WorkerConfig(schedule=str(tmp_path / "schedule.parquet"), parts_dir=str(tmp_path / "parts"),
                          control_dir=str(tmp_path / "control"), workers=2, languages=("en-de",), timeout_margin_s=1.0)
    runner = FakeRunner()
    return MasterRelay(runner, config).install(), runner, tmp_path / "control"


def test_master_relay_hands_a_worker_its_settings_and_writes_what_it_reports(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    runner.say(MSG_HELLO, {"version": software_version(), "host": "h1"}, "node-1")
    name, data, to = runner.sent[-1]
    assert (name, data["index"], to, data["config"]["workers"]) == (MSG_CONFIG, 1, "node-1", 2)
    assert data["schedule"] == (tmp_path / "schedule.parquet").read_bytes()
    runner.say(MSG_READY, {"index": 1, "rows": 1, "offset_s": 0.25, "rtt_s": 0.001}, "node-1")
    assert (control / "ready-1").read_text() == "1"
    assert json.loads((control / "clock-1.json").read_text())["clock_offset_ms"] == 250.0
    runner.say(MSG_PART, {"index": 1, "name": "part-w001-000000.parquet", "data": b"PAR1"}, "node-1")
    runner.say(MSG_PART, {"index": 1, "name": "../escape.parquet", "data": b"x"}, "node-1")
    assert [p.name for p in (tmp_path / "parts").iterdir()] == ["part-w001-000000.parquet"]
    runner.say(MSG_DONE, {"index": 1, "failed": "RuntimeError: boom"}, "node-1")
    assert (control / "done-1").exists() and "boom" in (control / "failed-1").read_text()


def test_master_relay_refuses_another_version_with_the_reason(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    runner.say(MSG_HELLO, {"version": "rushhour 0.0.1, locust 1.0", "host": "old-box"}, "node-0")
    name, data, to = runner.sent[-1]
    assert name == MSG_REFUSED and to == "node-0"
    assert 'old-box runs "rushhour 0.0.1, locust 1.0"' in data["reason"]
    assert "old-box" in (control / "failed-0").read_text()


def test_refusal_turns_away_one_worker_too_many() -> None:
    assert "expects 2 worker(s)" in str(refusal({"version": software_version(), "host": "h"}, 2, 2))
    assert refusal({"version": software_version(), "host": "h"}, 1, 2) is None


def test_master_relay_sends_the_start_and_writes_down_a_lost_worker(tmp_path: Path) -> None:
    _, runner, control = _relay(tmp_path)
    runner.say(MSG_HELLO, {"version": software_version(), "host": "h0"}, "node-0")
    publish_start(control, 1234.5)
    runner.clients["node-0"].state = STATE_MISSING
    gevent.sleep(0.2)
    assert (MSG_START, {"t0": 1234.5}, None) in runner.sent
    assert "worker 0 on h0 stopped answering" in (control / "failed-0").read_text()
    assert (control / "done-0").exists()
