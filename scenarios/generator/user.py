"""The Locust user both drills' users derive from: the target's protocol and TLS, no redirect, a stamping pool.

Importing it makes the process a load generator's: host names connect only where the runner's
loopback guard looked, and pyarrow settles at Locust's start that pandas is not there.
"""

from __future__ import annotations

from typing import Any

from locust import FastHttpUser, events

from rushhour.scenarios.generator.handoff import stamp_connections
from rushhour.scenarios.generator.partwriter import keep_pandas_out
from rushhour.scenarios.generator.pinned_pools import install_pinned_resolver
from rushhour.scenarios.protocols.base import make_protocol
from rushhour.scenarios.protocols.tls import ssl_context_factory
from rushhour.scenarios.spec.target import TargetProtocol

install_pinned_resolver()  # connect only where the runner's loopback guard looked


@events.init.add_listener
def _lean(**_kwargs: Any) -> None:
    keep_pandas_out()  # a Locust process: see the function


class TargetUser(FastHttpUser):
    """A user that speaks the target's protocol: a 3xx is recorded as the answer (the guard allowed
    only the target's host), nothing is retried, an https target is verified (against its
    `ca_bundle` when the scenario gives one), and each connection is stamped when it is handed out."""

    abstract = True
    network_timeout = 600.0
    connection_timeout = 10.0
    max_redirects = 0
    max_retries = 0
    insecure = False

    def __init__(self, environment: Any, target: TargetProtocol | None, host: str | None = None) -> None:
        if host is not None:
            self.host = host
        self.protocol = make_protocol(target or {})
        self.ssl_context_factory = ssl_context_factory(self.protocol.spec.ca_bundle)
        super().__init__(environment)
        stamp_connections(self.client.client)
