"""The Locust master's side of a drill across hosts: the control files, relayed over Locust's channel.

On one machine the runner and the Locust workers share a control folder (`rushhour.scenarios.generator.share_run`).
Remote workers cannot write into the master's folder, so the Locust master process relays:
whatever a worker says over Locust's own message channel (`runner.send_message` /
`register_message`) becomes the same marker or part file a local worker would have written, and
the `start` file the runner publishes goes out to every worker as a message. The runner's
`LoadSession` therefore reads one folder whatever the topology, and the results are identical in
form. A worker Locust reports missing (no heartbeat) before it said `done` is written down as
failed with the reason, so its unsent share counts as not sent and the run is invalid.

Nobody joins without the cluster secret (`rushhour.scenarios.generator.clusterauth`): a hello is answered with
a challenge (and the master's own proof of the secret), and only a node that proves it holds the
secret is welcomed, given the lowest free worker index and told the version check's outcome.
Every later message must carry a valid MAC for the node welcomed for its index, and every message
the master sends it carries one too, Locust's own `spawn`, `stop` and `quit` included
(`rushhour.scenarios.generator.control_auth`); anything else is dropped and counted in `rejections.json`
(the drill writes the counts into `events.jsonl` as `cluster_rejections`).

Locust's own handlers run first, and trust what they receive: a message naming another node
(`quit` or `client_stopped` with a welcomed worker's id) would take that worker out, and one that
raises (`("exception", None, node)`, a frame that is not a message) would end the listener, after
which the master hears nothing. The relay therefore wraps Locust's receiving: a message whose
node id is not the connection it came from is dropped, one that raises in any handler is dropped,
and the listener goes on; each is counted with the rest. A refusal for a wrong secret
or a taken index leaves the run waiting for a rightful worker; only a worker that proved the
secret but runs another version stops the drill, with the reason.

Locust counts a node as a worker as soon as it connects, before the secret is checked, so a
refused node may be the one its headless master starts the test with; once it is gone, Locust can
be left with a test it never started (it found no worker by the time its start ran) or one it
will not rebalance, and the rightful worker that joins next is given no users and would idle
until Locust's run time ends. The relay watches for that: a welcomed worker still without users
IDLE_GRACE_S after its welcome, while Locust is not spawning, gets the test started again for it.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import gevent

from rushhour.kernel.atomic import write_bytes_atomic, write_text_atomic
from rushhour.scenarios.generator import clusterauth
from rushhour.scenarios.generator.clocksync import software_version
from rushhour.scenarios.generator.control_auth import ControlSigner
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import START_FILE
from rushhour.scenarios.generator.worker_local import remote_target

MSG_PING, MSG_PONG = "rh_ping", "rh_pong"
MSG_HELLO, MSG_CHALLENGE, MSG_PROVE = "rh_hello", "rh_challenge", "rh_prove"
MSG_CONFIG, MSG_REFUSED = "rh_config", "rh_refused"
MSG_READY, MSG_START, MSG_PART, MSG_DONE = "rh_ready", "rh_start", "rh_part", "rh_done"
MSG_CPU = "rh_cpu"
MALFORMED = "malformed"
"""The count of frames that were not a Locust message at all."""
WATCH_S = 0.05
STATE_MISSING = "missing"
"""`locust.runners.STATE_MISSING`, spelled out: importing Locust here would monkey-patch the importer."""
STATE_IDLE, STATE_SPAWNING = "ready", "spawning"
"""`locust.runners.STATE_INIT` (a worker given no users yet) and `STATE_SPAWNING`, spelled out."""
IDLE_GRACE_S = 3.0
"""How long a welcomed worker may wait for its users before the relay starts the test for it: Locust's
own start takes up to a second after the last heartbeat, and heartbeats come every second."""
PART_NAME = re.compile(r"^part-w\d{3}-\d{6}\.parquet$")
REJECTIONS_FILE = "rejections.json"
SECRET_MISMATCH = ("the cluster secret did not match: give this worker the master's secret "
                   f"({clusterauth.SECRET_ENV} or --secret-file)")
log = logging.getLogger(__name__)


class MasterRelay:
    """Turns the workers' messages into control and part files, and the start file into a message."""

    def __init__(self, runner: Any, settings: LoadSettings, secret: str | None = None) -> None:
        self._runner = runner
        self._settings = settings
        self._secret = secret
        self._control = settings.control_dir
        self._parts = settings.parts_dir
        self._schedule = settings.schedule_path.read_bytes()
        self._nodes: dict[int, str] = {}
        self._hosts: dict[int, str] = {}
        self._closed: set[int] = set()
        self._welcomed: dict[int, float] = {}
        self._started_at = -math.inf
        self._pending: dict[str, str] = {}
        self._keys: dict[int, bytes] = {}
        self._seq: dict[int, int] = {}
        self._sent_seq: Counter[str] = Counter()
        self._dropped: Counter[str] = Counter()
        self._refused: list[str] = []
        self._signer: ControlSigner | None = None

    def install(self) -> MasterRelay:
        handlers = {MSG_PING: self._ping, MSG_HELLO: self._hello, MSG_PROVE: self._prove, MSG_READY: self._ready,
                    MSG_PART: self._part, MSG_DONE: self._done, MSG_CPU: self._cpu}
        for name, handler in handlers.items():
            self._runner.register_message(name, handler)
        self._guard_listener()
        self._sign_control()
        gevent.spawn(self._watch)
        return self

    def _sign_control(self) -> None:
        """Sign Locust's own control messages to welcomed workers (`rushhour.scenarios.generator.control_auth`)."""
        server = getattr(self._runner, "server", None)
        if server is not None:
            self._signer = ControlSigner(server.send_to_client, self._key_of, self._next_seq)
            server.send_to_client = self._signer

    def _key_of(self, node_id: str) -> bytes | None:
        return next((self._keys[index] for index, node in self._nodes.items() if node == node_id), None)

    def _next_seq(self, node_id: str) -> int:
        self._sent_seq[node_id] += 1
        return self._sent_seq[node_id]

    def _guard_listener(self) -> None:
        """Wrap Locust's receiving so that no message can end its listener or speak for another node."""
        handle: Callable[[str, Any], None] | None = getattr(self._runner, "handle_message", None)
        server = getattr(self._runner, "server", None)
        if handle is not None:
            self._runner.handle_message = lambda client_id, msg: self._guarded(handle, client_id, msg)
        if server is not None:
            receive = server.recv_from_client
            server.recv_from_client = lambda: self._received(receive)

    def _guarded(self, handle: Callable[[str, Any], None], client_id: str, msg: Any) -> None:
        msg_type = msg.type if isinstance(getattr(msg, "type", None), str) else MALFORMED
        if getattr(msg, "node_id", None) != client_id:
            self._drop(msg_type, str(client_id), f"it names another node ({str(getattr(msg, 'node_id', ''))[:80]!r})")
            return
        try:
            handle(client_id, msg)
        except Exception as exc:  # noqa: BLE001 - whatever a sender makes Locust raise, the listener lives on
            self._drop(msg_type, str(client_id), f"it raised {type(exc).__name__} in its handler")

    def _received(self, receive: Callable[[], tuple[str, Any]]) -> tuple[str, Any]:
        """Locust's receive, with a frame it cannot read counted and turned into its own 'unreadable' error
        (Locust catches that one; a TypeError from a frame that is not a 3-tuple would end the listener)."""
        from locust.exception import RPCError, RPCReceiveError

        try:
            return receive()
        except RPCReceiveError:
            self._drop(MALFORMED, "?", "a frame that is not a Locust message")
            raise
        except RPCError:
            raise
        except Exception as exc:  # e.g. msgpack of the wrong shape
            self._drop(MALFORMED, "?", "a frame that is not a Locust message")
            raise RPCReceiveError(f"unreadable frame ({type(exc).__name__})") from exc

    def _tell(self, node_id: str, key: bytes, msg_type: str, data: dict[str, object]) -> None:
        """One message to a worker, with a sequence number of its own and the session's MAC."""
        self._runner.send_message(msg_type, clusterauth.signed(key, msg_type, data, self._next_seq(node_id)), node_id)

    def _ping(self, environment: Any, msg: Any) -> None:
        index = self._accept(MSG_PING, msg)
        if index is not None:
            self._tell(msg.node_id, self._keys[index], MSG_PONG, {"sent": float(msg.data["sent"]), "master": time.time()})

    def _hello(self, environment: Any, msg: Any) -> None:
        """A fresh challenge for every hello, with the master's proof over the worker's nonce: a recorded
        answer never fits the next one, and the worker knows whom it answers."""
        data = msg.data if isinstance(msg.data, dict) else {}
        theirs = data.get("nonce")
        if not isinstance(theirs, str) or not re.fullmatch(r"[0-9a-f]{32}", theirs):
            self._drop(MSG_HELLO, msg.node_id, "a hello without the worker's nonce")
            return
        nonce = clusterauth.new_nonce()
        self._pending[msg.node_id] = f"{nonce}:{theirs}"
        proof = clusterauth.master_proof(self._secret, theirs, nonce, msg.node_id)
        self._runner.send_message(MSG_CHALLENGE, {"nonce": nonce, "proof": proof}, msg.node_id)

    def _prove(self, environment: Any, msg: Any) -> None:
        pending = self._pending.pop(msg.node_id, None)
        data = msg.data if isinstance(msg.data, dict) else {}
        if pending is None:
            self._drop(MSG_PROVE, msg.node_id, "an answer to no challenge (replayed or unasked)")
            return
        nonce, theirs = pending.split(":")
        key = clusterauth.session_key(self._secret, nonce, msg.node_id, theirs)
        if not clusterauth.same(data.get("proof"), clusterauth.proof(self._secret, nonce, msg.node_id)):
            self._refuse(msg.node_id, SECRET_MISMATCH, key)
            return
        host = str(data.get("host", "?"))
        reason = version_refusal(data, host)
        index = next((i for i in range(self._settings.workers) if i not in self._nodes), None)
        if reason is not None:  # a rightful worker of another version: the drill cannot run as asked
            log.error("%s", reason)
            self._tell(msg.node_id, key, MSG_REFUSED, {"reason": reason})
            self._mark(f"failed-{0 if index is None else index}", reason)
            return
        if index is None:
            self._refuse(msg.node_id, f"the worker on {host} came when all {self._settings.workers} worker "
                                      "index(es) were taken; start it again for the next drill", key)
            return
        self._welcome(msg.node_id, index, host, key)

    def _welcome(self, node_id: str, index: int, host: str, key: bytes) -> None:
        self._nodes[index], self._hosts[index], self._keys[index], self._seq[index] = node_id, host, key, 0
        self._welcomed[index] = time.monotonic()
        wire = self._settings.to_wire()
        config = {**wire, "target": remote_target(wire["target"])}
        host = str(getattr(getattr(self._runner, "environment", None), "host", "") or "")
        self._tell(node_id, key, MSG_CONFIG, {"index": index, "config": config, "host": host,
                                              "schedule": self._schedule})
        if self._signer is not None:
            self._signer.welcomed(node_id)

    def _refuse(self, node_id: str, reason: str, key: bytes) -> None:
        log.warning("Refused node %s: %s.", node_id, reason)
        self._refused.append(reason)
        self._write_rejections()
        self._tell(node_id, key, MSG_REFUSED, {"reason": reason})
        if self._signer is not None:
            self._signer.forget(node_id)
        self._forget(node_id)

    def _forget(self, node_id: str) -> None:
        """Take a refused node out of Locust's worker list: its leaving must not end the test (Locust
        stops when its last worker quits) nor hold users a rightful worker should run."""
        client = self._runner.clients.get(node_id)
        if client is None:
            return
        del self._runner.clients[node_id]
        dispatcher = getattr(self._runner, "_users_dispatcher", None)
        if dispatcher is not None:
            dispatcher.remove_worker(client)

    def _accept(self, msg_type: str, msg: Any) -> int | None:
        """The index of a message from the node welcomed for it, MAC and sequence right; else None."""
        data = msg.data if isinstance(msg.data, dict) else {}
        try:
            index, seq = int(data["index"]), int(data[clusterauth.SEQ_FIELD])
        except (KeyError, TypeError, ValueError):
            index, seq = -1, 0
        if self._nodes.get(index) != msg.node_id or not clusterauth.verify(self._keys[index], msg_type, data):
            self._drop(msg_type, msg.node_id, "not from the node welcomed for its index")
            return None
        if seq <= self._seq[index]:
            self._drop(msg_type, msg.node_id, "a sequence number already seen (replayed)")
            return None
        self._seq[index] = seq
        return index

    def _drop(self, msg_type: str, node_id: str, why: str) -> None:
        log.warning("Dropped %s from node %s: %s.", msg_type, node_id, why)
        self._dropped[msg_type] += 1
        self._write_rejections()

    def _write_rejections(self) -> None:
        self._mark(REJECTIONS_FILE, json.dumps({"dropped": dict(self._dropped), "refused": self._refused}))

    def _ready(self, environment: Any, msg: Any) -> None:
        index = self._accept(MSG_READY, msg)
        if index is None:
            return
        clock = {"index": index, "host": self._hosts.get(index, "?"), "rows": int(msg.data["rows"]),
                 "clock_offset_ms": round(1000.0 * float(msg.data["offset_s"]), 3),
                 "clock_rtt_ms": round(1000.0 * float(msg.data["rtt_s"]), 3)}
        self._mark(f"clock-{index}.json", json.dumps(clock))
        self._mark(f"ready-{index}", str(clock["rows"]))

    def _part(self, environment: Any, msg: Any) -> None:
        index = self._accept(MSG_PART, msg)
        if index is None:
            return
        name = str(msg.data["name"])
        if not PART_NAME.match(name) or not name.startswith(f"part-w{index:03d}-") or index in self._closed:
            self._drop(MSG_PART, msg.node_id, f"part {name!r} is not worker {index}'s, or came after its done")
            return
        write_bytes_atomic(msg.data["data"], self._parts / name, sync=False)

    def _cpu(self, environment: Any, msg: Any) -> None:
        """A worker's own CPU (% of one core): the runner judges the generator by its busiest host."""
        index = self._accept(MSG_CPU, msg)
        if index is not None:
            self._mark(f"cpu-{index}", f"{float(msg.data['cpu']):.1f}")

    def _done(self, environment: Any, msg: Any) -> None:
        index = self._accept(MSG_DONE, msg)
        if index is None:
            return
        if msg.data.get("failed"):
            self._mark(f"failed-{index}", f"worker {index} on {self._hosts.get(index, '?')}: {msg.data['failed']}")
        self._close(index)

    def _close(self, index: int) -> None:
        if index not in self._closed:
            self._closed.add(index)
            self._mark(f"done-{index}", "")

    def _mark(self, name: str, text: str) -> None:
        write_text_atomic(text, self._control / name, sync=False)

    def _watch(self) -> None:
        """Send the start time once the runner publishes it; write down workers that went missing."""
        started = False
        while True:
            gevent.sleep(WATCH_S)
            start = self._control / START_FILE
            if not started and start.exists():
                t0 = float(start.read_text(encoding="utf-8"))
                for index, node_id in self._nodes.items():
                    self._tell(node_id, self._keys[index], MSG_START, {"t0": t0})
                started = True
            self._start_for_idle(time.monotonic())
            for index in lost_workers(self._runner, self._nodes, self._closed):
                how = ("stopped answering (no Locust heartbeat)" if self._runner.clients.get(self._nodes[index])
                       else "left the run (its Locust worker quit)")
                reason = (f"worker {index} on {self._hosts.get(index, '?')} {how} before it finished; its unsent "
                          "share counts as not sent")
                log.error("%s", reason)
                self._mark(f"failed-{index}", reason)
                self._close(index)

    def _start_for_idle(self, now: float) -> None:
        """Start Locust's test again when a welcomed worker has waited IDLE_GRACE_S without users
        (module doc); at most once per grace period, never while Locust is spawning."""
        if now - self._started_at < IDLE_GRACE_S or self._runner.state == STATE_SPAWNING:
            return
        idle = idle_workers(self._runner, self._nodes, self._closed)
        if not any(now - self._welcomed[index] >= IDLE_GRACE_S for index in idle):
            return
        users = int(self._runner.target_user_count)
        if users < 1:  # Locust has not tried its own start yet
            return
        self._started_at = now
        log.warning("Worker(s) %s had no users %.0f s after joining; starting the test again for them.",
                    ", ".join(str(index) for index in idle), IDLE_GRACE_S)
        gevent.spawn(self._runner.start, users, float(users))


def version_refusal(hello: dict[str, Any], host: str) -> str | None:
    """Why a worker that proved the secret is turned away (None: same version, welcome)."""
    theirs, ours = str(hello.get("version", "")), software_version()
    if theirs != ours:
        return (f'The worker on {host} runs "{theirs}" but the master runs "{ours}"; '
                "install the same version on every host.")
    return None


def idle_workers(runner: Any, nodes: dict[int, str], closed: set[int]) -> list[int]:
    """Indexes of welcomed workers, not yet done, that Locust has given no users."""
    idle = []
    for index, node_id in nodes.items():
        client = runner.clients.get(node_id)
        if index not in closed and client is not None and client.state == STATE_IDLE:
            idle.append(index)
    return idle


def lost_workers(runner: Any, nodes: dict[int, str], closed: set[int]) -> list[int]:
    """Indexes of welcomed workers Locust no longer counts (missing heartbeat or gone), not yet done."""
    lost = []
    for index, node_id in nodes.items():
        client = runner.clients.get(node_id)
        if index not in closed and (client is None or client.state == STATE_MISSING):
            lost.append(index)
    return lost
