"""A worker cannot be used as an oracle: a rogue master that relays the worker's hello to the real
master (as its own), and the real master's challenge back to the worker, gets no proof to hand
on, so the real master never welcomes it and never sends it the schedule.

The master's proof is bound to the node it answers; the rogue's connection to the real master is
another node than the worker's, so the worker refuses the relayed challenge. Played against the
real `MasterRelay` and `WorkerRelay` through in-process channels.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rushhour.scenarios.generator.master_relay import (
    MSG_CHALLENGE,
    MSG_CONFIG,
    MSG_HELLO,
    MSG_PROVE,
    REJECTIONS_FILE,
    SECRET_MISMATCH,
    MasterRelay,
)
from rushhour.scenarios.generator.worker_relay import WorkerRefused
from tests.scenarios.generator.test_worker_relay import SECRET, Msg, WorkerSide, _settings, _worker

ROGUE = "rogue-node-7"


@dataclass
class RealMaster:
    """Just what `MasterRelay` uses of Locust's MasterRunner; what it sends is kept per node."""

    handlers: dict[str, Any] = field(default_factory=dict)
    clients: dict[str, Any] = field(default_factory=dict)
    sent: list[tuple[str, str | None, Any]] = field(default_factory=list)

    def register_message(self, name: str, handler: Any) -> None:
        self.handlers[name] = handler

    def send_message(self, name: str, data: Any = None, client_id: str | None = None) -> None:
        self.sent.append((name, client_id, data))

    def to(self, node: str) -> list[tuple[str, Any]]:
        return [(name, data) for name, client, data in self.sent if client == node]


def test_a_rogue_master_cannot_relay_the_real_masters_challenge_through_a_worker(tmp_path: Path) -> None:
    real = RealMaster()
    MasterRelay(real, _settings(tmp_path), SECRET).install()
    victim, stops = WorkerSide(), list[int]()

    def relay_hello(environment: Any, msg: Msg) -> None:  # the victim's hello, sent on as the rogue's own
        real.handlers[MSG_HELLO](environment=None, msg=Msg(msg.data, ROGUE))
        challenge = next(data for name, data in real.to(ROGUE) if name == MSG_CHALLENGE)
        victim.hear(MSG_CHALLENGE, challenge)

    def relay_prove(environment: Any, msg: Msg) -> None:  # whatever the victim answers, on to the real master
        real.handlers[MSG_PROVE](environment=None, msg=Msg(msg.data, ROGUE))

    victim.master = {MSG_HELLO: relay_hello, MSG_PROVE: relay_prove}
    worker = _worker(tmp_path, victim, stops)
    with pytest.raises(WorkerRefused, match="the master could not prove it holds this worker's secret"):
        worker.joined(timeout_s=5)
    assert [name for name, _ in real.to(ROGUE)][0] == MSG_CHALLENGE, "the relay never reached the real master"
    assert [data for name, data in victim.said if name == MSG_PROVE] == [{"proof": "", "host": "w"}]
    assert MSG_CONFIG not in [name for name, _ in real.to(ROGUE)], "the real master sent the rogue its settings"
    rejections = json.loads((tmp_path / "control" / REJECTIONS_FILE).read_text())
    assert rejections["refused"] == [SECRET_MISMATCH]
