"""geventhttpclient's connection pools, connecting a host name only where the loopback guard looked.

A Locust process sends through geventhttpclient, whose pools look the target's name up again for
every connection. Installed (`install_pinned_resolver`, once per Locust process, before the first
connection), a pool connects at `rushhour.kernel.loopback.connect_addresses` instead: the addresses
the runner's guard checked and handed over in RUSHHOUR_PINNED_HOSTS, or those this process's own
guard checked (a remote worker's). The Host header and TLS server name stay the name.
"""

from __future__ import annotations

from typing import Any

import gevent.socket
from geventhttpclient.connectionpool import ConnectionPool

from rushhour.kernel.loopback import connect_addresses
from rushhour.kernel.pinning import load_pins

__all__ = ["install_pinned_resolver"]


def _pinned_resolve(pool: ConnectionPool) -> list[Any]:
    """What `ConnectionPool._resolve` returns, for the pinned addresses only (never a fresh lookup of a name)."""
    family = gevent.socket.AF_INET if pool.disable_ipv6 else 0
    infos: list[Any] = []
    for address in connect_addresses(pool._connection_host):
        infos.extend(gevent.socket.getaddrinfo(address, pool._connection_port, family, gevent.socket.SOCK_STREAM,
                                               gevent.socket.SOL_TCP, gevent.socket.AI_NUMERICHOST))
    return infos


def install_pinned_resolver(environ: dict[str, str] | None = None) -> None:
    """Take the runner's pins and make every geventhttpclient pool of this process connect through them."""
    load_pins(environ)
    ConnectionPool._resolve = _pinned_resolve  # type: ignore[method-assign, assignment]
