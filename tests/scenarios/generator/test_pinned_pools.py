"""The load connects where the guard looked, whatever the target's name answers afterwards.

The attack (DNS rebinding): the target's name answers 127.0.0.1 when the guard checks it, then
192.0.2.1 (a TEST-NET address standing for a host the operator never allowed) for every lookup
after. geventhttpclient looked the name up again for each connection, so the load went to
192.0.2.1: the control case below shows every connection after the guard's look aimed there. With the pinned
resolver installed, every request reaches the loopback truth server, the name is looked up once
(by the guard), and no connection is ever aimed off loopback. Nothing contacts 192.0.2.1: a
recorder refuses any connection not on loopback before it is made.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gevent.socket
import pytest
from geventhttpclient.connectionpool import ConnectionPool

from rushhour.kernel.loopback import refused_address
from rushhour.kernel.pinning import forget_pins
from rushhour.scenarios.generator import handoff
from rushhour.scenarios.generator.direct import DirectSender
from rushhour.scenarios.generator.pinned_pools import install_pinned_resolver
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.locust import worker_env
from rushhour.scenarios.protocols.base import make_protocol
from tests.scenarios.generator.truth import Fate, truth_server

NAME = "rebind.test"
REQUESTS = 5


class Rebinding:
    """A stand-in DNS for NAME: loopback on the first lookup, TEST-NET on every later one."""

    def __init__(self, real: Any) -> None:
        self.real, self.asked = real, 0

    def __call__(self, host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != NAME:
            return self.real(host, port, *args, **kwargs)
        self.asked += 1
        address = "127.0.0.1" if self.asked == 1 else "192.0.2.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port or 0))]


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Rebinding, list[str]]]:
    forget_pins()
    resolver = Rebinding(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    monkeypatch.setattr(gevent.socket, "getaddrinfo", resolver)
    monkeypatch.setattr(ConnectionPool, "_resolve", ConnectionPool._resolve)  # restored after the test
    aimed: list[str] = []
    connect = ConnectionPool._connect_socket

    def loopback_only(pool: ConnectionPool, sock: Any, address: Any) -> Any:
        aimed.append(address[0])
        if not ipaddress.ip_address(address[0]).is_loopback:
            raise ConnectionRefusedError(f"the test refused a connection to {address[0]}")
        return connect(pool, sock, address)

    monkeypatch.setattr(ConnectionPool, "_connect_socket", loopback_only)
    yield resolver, aimed
    forget_pins()


def _send(host: str, row: int) -> Any:
    """One request through a fresh pool (so a fresh connection, and a fresh resolution)."""
    pool = handoff.StampedClientPool(concurrency=1, network_timeout=5.0, connection_timeout=2.0)
    session = SimpleNamespace(client=SimpleNamespace(clientpool=pool), base_url=host, auth_header=None)
    handoff.begin()
    return DirectSender(session, make_protocol({}))({"text": "x", "tenant": f"r{row}"}, 5.0)


def test_a_rebinding_name_cannot_redirect_the_load(rebinding: tuple[Rebinding, list[str]]) -> None:
    resolver, aimed = rebinding
    with truth_server(lambda row: Fate(200)) as (host, ledger):
        target = host.replace("127.0.0.1", NAME)
        assert refused_address(target, allow_remote=False) is None
        install_pinned_resolver({})
        statuses = [_send(target, row).status for row in range(REQUESTS)]
        arrived = sorted(ledger.frame()["row"])
    assert statuses == [200] * REQUESTS and arrived == list(range(REQUESTS))
    assert resolver.asked == 1 and set(aimed) == {"127.0.0.1"}


def test_without_the_pins_the_second_connection_is_aimed_elsewhere(rebinding: tuple[Rebinding, list[str]]) -> None:
    """The control: what the attack did before (the recorder refuses the off-loopback connection)."""
    resolver, aimed = rebinding
    with truth_server(lambda row: Fate(200)) as (host, ledger):
        target = host.replace("127.0.0.1", NAME)
        assert refused_address(target, allow_remote=False) is None
        statuses = [_send(target, row).status for row in range(2)]
        arrived = len(ledger.frame())
    assert resolver.asked == 3 and aimed == ["192.0.2.1", "192.0.2.1"]  # each connection looked the name up again
    assert statuses == [0, 0] and arrived == 0


FIRING = """
import json, sys
from geventhttpclient.connectionpool import ConnectionPool

aimed = []
real_connect = ConnectionPool._connect_socket

def spy(self, sock, address):
    aimed.append(address[0])
    return real_connect(self, sock, address)

ConnectionPool._connect_socket = spy

from locust.env import Environment
from rushhour.scenarios.generator import handoff
from rushhour.scenarios.generator.locustfile import OpenLoopUser

OpenLoopUser.host = sys.argv[1]
user = OpenLoopUser(Environment(user_classes=[OpenLoopUser], host=sys.argv[1]))
statuses = []
for row in range(3):
    handoff.begin()
    statuses.append(user._send({"text": "x", "tenant": f"r{row}"}, 5.0).status)
print(json.dumps({"statuses": statuses, "aimed": aimed}))
"""


@pytest.mark.slow
def test_a_locust_process_connects_at_the_runners_pins(rebinding: tuple[Rebinding, list[str]]) -> None:
    """The runner's guard pins NAME to 127.0.0.1 (its stand-in DNS); the Locust process it starts has
    no such DNS (the name does not resolve there at all), so only the pins handed over in
    RUSHHOUR_PINNED_HOSTS can bring its requests to the loopback truth server."""
    root = Path(__file__).resolve().parents[3]
    with truth_server(lambda row: Fate(200)) as (host, ledger):
        target = host.replace("127.0.0.1", NAME)
        assert refused_address(target, allow_remote=False) is None
        settings = LoadSettings(host=target, schedule_path=Path("s"), work_dir=Path("w"), duration_s=1.0)
        env = {**worker_env(settings), "PYTHONPATH": str(root)}
        probe = subprocess.run([sys.executable, "-c", FIRING, target], env=env, cwd=root, capture_output=True,
                               text=True, timeout=60, check=False)
        assert probe.returncode == 0, probe.stderr
        seen = json.loads(probe.stdout.strip().splitlines()[-1])
        arrived = sorted(ledger.frame()["row"])
    assert seen["statuses"] == [200, 200, 200] and arrived == [0, 1, 2]
    assert seen["aimed"] and set(seen["aimed"]) == {"127.0.0.1"}
