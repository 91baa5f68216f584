"""Locust's control messages between a master's signer and a worker's guard, with stand-in runners.

The attack: a `stop` or `quit` put on a worker's connection (no MAC, a wrong one, or a signed one
recorded and sent again). Before, Locust's worker handled every such message as its master's. Here
the guard hands Locust only what the master that proved the secret signed, once, in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rushhour.scenarios.generator import clusterauth
from rushhour.scenarios.generator.control_auth import ControlSigner, guard_control

KEY = b"k" * 32


@dataclass
class Message:
    """Locust's Message, as far as the relays read it."""

    type: str
    data: Any
    node_id: str


class Runner:
    """A worker runner that records what Locust's own handler was given."""

    def __init__(self) -> None:
        self.handled: list[tuple[str, Any]] = []

    def handle_message(self, msg: Message) -> None:
        self.handled.append((msg.type, msg.data))


def _verifier() -> tuple[Any, list[str]]:
    """The worker relay's check, as it is: MAC under KEY, sequence numbers that only rise."""
    state = {"heard": 0}
    dropped: list[str] = []

    def heard(msg_type: str, msg: Message) -> dict[str, Any] | None:
        data = msg.data if isinstance(msg.data, dict) else {}
        seq = data.get(clusterauth.SEQ_FIELD)
        if clusterauth.verify(KEY, msg_type, data) and isinstance(seq, int) and seq > state["heard"]:
            state["heard"] = seq
            return data
        dropped.append(msg_type)
        return None

    return heard, dropped


def _signer(sent: list[Message], keys: dict[str, bytes]) -> ControlSigner:
    count = {"seq": 0}

    def next_seq(node_id: str) -> int:
        count["seq"] += 1
        return count["seq"]

    return ControlSigner(sent.append, keys.get, next_seq)


def test_signed_control_reaches_locust_unwrapped_and_forged_or_replayed_is_dropped() -> None:
    sent: list[Message] = []
    signer = _signer(sent, {"w1": KEY})
    runner, (heard, dropped) = Runner(), _verifier()
    guard_control(runner, heard)
    signer(Message("spawn", {"timestamp": 1.0, "user_classes_count": {"OpenLoopUser": 2}}, "w1"))
    signer(Message("heartbeat", None, "w1"))
    for msg in sent:
        runner.handle_message(msg)
    runner.handle_message(Message("stop", None, "w1"))  # no MAC
    runner.handle_message(Message("quit", {"data": None, "seq": 99, "mac": "0" * 64}, "w1"))  # a wrong MAC
    runner.handle_message(sent[0])  # a signed spawn, recorded and sent again
    assert runner.handled == [("spawn", {"timestamp": 1.0, "user_classes_count": {"OpenLoopUser": 2}}),
                              ("heartbeat", None)]
    assert dropped == ["stop", "quit", "spawn"]


def test_control_to_a_node_not_yet_welcomed_is_held_then_sent_signed_in_order() -> None:
    sent: list[Message] = []
    keys: dict[str, bytes] = {}
    signer = _signer(sent, keys)
    signer(Message("spawn", {"timestamp": 1.0}, "w1"))
    signer(Message("stop", None, "w1"))
    signer(Message("quit", None, "stranger"))
    assert sent == []
    keys["w1"] = KEY
    signer.welcomed("w1")
    signer.forget("stranger")
    assert [(m.type, m.data[clusterauth.SEQ_FIELD]) for m in sent] == [("spawn", 1), ("stop", 2)]
    assert all(clusterauth.verify(KEY, m.type, m.data) for m in sent)
    keys["stranger"] = KEY
    signer.welcomed("stranger")
    assert len(sent) == 2, "a refused node's held messages are never sent"
