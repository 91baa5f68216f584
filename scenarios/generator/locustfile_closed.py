"""Locust entry point of a closed-loop drill (`load.mode: closed`); logic in `rushhour.scenarios.generator.closed`.

Persona users send, wait for the reply, and pace themselves; the shape makes their number follow
the traffic model's rate curve. They speak the target's protocol (`rushhour.scenarios.protocols`) through
the same sender as the open loop, so a streamed answer is timed token by token here too.
"""

from __future__ import annotations

from typing import Any

import gevent
from locust import FastHttpUser, LoadTestShape, constant_pacing, events, task

from rushhour.scenarios.generator.closed import PACING_S, ClosedDrill, shape_users
from rushhour.scenarios.generator.handoff import stamp_connections
from rushhour.scenarios.generator.partwriter import keep_pandas_out
from rushhour.scenarios.generator.pinned_pools import install_pinned_resolver
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.wire import WireSender
from rushhour.scenarios.protocols.base import make_protocol
from rushhour.scenarios.protocols.tls import ssl_context_factory

install_pinned_resolver()  # connect only where the runner's loopback guard looked
SHAPE_SLACK_S = 5  # the shape's clock starts before the common start time; run on a little
_drill: ClosedDrill | None = None


def _shared(environment: Any) -> ClosedDrill:
    global _drill
    if _drill is None:
        _drill = ClosedDrill(LoadSettings.from_env(), environment.runner.worker_index)
    return _drill


@events.init.add_listener
def _lean(**_kwargs: Any) -> None:
    keep_pandas_out()  # a Locust process: see the function


@events.test_stop.add_listener
def _flush(**_kwargs: Any) -> None:
    if _drill is not None:
        _drill.flush()


class PersonaUser(FastHttpUser):
    """A customer: one translation, then wait out the pacing, then the next."""

    wait_time = constant_pacing(PACING_S)
    network_timeout = 600.0
    connection_timeout = 10.0
    max_redirects = 0
    max_retries = 0
    insecure = False

    def __init__(self, environment: Any) -> None:
        self.protocol = make_protocol(LoadSettings.from_env().target or {})
        self.ssl_context_factory = ssl_context_factory(self.protocol.spec.ca_bundle)
        super().__init__(environment)
        stamp_connections(self.client.client)
        self._send = WireSender(self.client, self.protocol)

    @task
    def translate(self) -> None:
        if not _shared(self.environment).step(self._send):
            gevent.sleep(PACING_S)


class RateShape(LoadTestShape):
    """User count follows the schedule's rate, second by second; stops at the run's end."""

    def __init__(self) -> None:
        super().__init__()
        self._users = shape_users(LoadSettings.from_env())

    def tick(self) -> tuple[int, float] | None:
        second = int(self.get_run_time())
        if second >= len(self._users) + SHAPE_SLACK_S:
            return None
        users = int(self._users[min(second, len(self._users) - 1)])
        return users, float(users)
