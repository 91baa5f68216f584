"""Locust's own master→worker control messages, signed with the worker's session key and checked.

Locust's master tells a worker what to do in messages of its own (`spawn`, `stop`, `quit`,
`reconnect`, `update_user_class`, `spawning_complete`), which carry no authentication: anyone who
can put a frame on the worker's connection could stop its load or end it. In a drill across hosts
the relays sign them like their own messages (`rushhour.scenarios.generator.clusterauth`):

- the master wraps its server's `send_to_client`: a control message to a welcomed worker goes out
  as `{"data": <Locust's data>, "seq": n, "mac": HMAC(session key, type | data | n)}`, its sequence
  number from the same rising count as the relay's own messages to that worker; one to a node not
  yet welcomed is held and sent, signed, once it is (Locust may start its test on a worker before
  the worker proved the secret);
- the worker wraps its runner's `handle_message`: a control message passes to Locust, unwrapped,
  only with a valid MAC under the key of the master that proved the secret and a sequence number
  above every one seen; any other is dropped, counted and logged, and Locust never sees it.

`ack` (Locust's index before the handshake) and `heartbeat` stay as Locust sends them: neither
changes what a joined worker fires (rushhour's index comes in the signed configuration).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rushhour.scenarios.generator import clusterauth

__all__ = ["CONTROL_DATA", "CONTROL_TYPES", "ControlSigner", "guard_control"]

CONTROL_TYPES = frozenset({"spawn", "stop", "quit", "reconnect", "update_user_class", "spawning_complete"})
CONTROL_DATA = "data"
"""The field of a signed control message that holds Locust's own data (None for stop, quit, reconnect)."""

Sender = Callable[[Any], None]
Verifier = Callable[[str, Any], "dict[str, Any] | None"]


class ControlSigner:
    """The master's side: wraps `server.send_to_client` to sign (or hold) Locust's control messages."""

    def __init__(self, send: Sender, key_of: Callable[[str], bytes | None], next_seq: Callable[[str], int]) -> None:
        self._send, self._key_of, self._next_seq = send, key_of, next_seq
        self._held: dict[str, list[Any]] = {}

    def __call__(self, msg: Any) -> None:
        if getattr(msg, "type", None) not in CONTROL_TYPES:
            self._send(msg)
            return
        key = self._key_of(str(msg.node_id))
        if key is None:
            self._held.setdefault(str(msg.node_id), []).append(msg)
            return
        self._send(self._signed(msg, key))

    def _signed(self, msg: Any, key: bytes) -> Any:
        data = clusterauth.signed(key, msg.type, {CONTROL_DATA: msg.data}, self._next_seq(str(msg.node_id)))
        return type(msg)(msg.type, data, msg.node_id)  # Locust's Message, not imported: importing Locust patches

    def welcomed(self, node_id: str) -> None:
        """Send, signed and in order, what Locust told `node_id` before it was welcomed."""
        key = self._key_of(node_id)
        held = self._held.pop(node_id, [])
        if key is not None:
            for msg in held:
                self._send(self._signed(msg, key))

    def forget(self, node_id: str) -> None:
        """A refused node: what was held for it is never sent."""
        self._held.pop(node_id, None)


def guard_control(runner: Any, heard: Verifier) -> None:
    """The worker's side: Locust's `handle_message` sees a control message only when `heard` (the
    relay's check of MAC and sequence, which counts and logs what it drops) passes it, unwrapped."""
    handle: Callable[[Any], None] | None = getattr(runner, "handle_message", None)
    if handle is None:
        return

    def checked(msg: Any) -> None:
        if getattr(msg, "type", None) in CONTROL_TYPES:
            data = heard(str(msg.type), msg)
            if data is None:
                return
            msg = type(msg)(msg.type, data.get(CONTROL_DATA), msg.node_id)
        handle(msg)

    runner.handle_message = checked
