"""HTTP clients that connect only where the loopback guard looked (`rushhour.kernel.pinning`).

`pinned_transport` is an httpx transport whose network backend maps a host name to the addresses
the guard checked and pinned, for the probe and every other httpx client of a command; the
request's Host header and TLS server name stay the name. The Locust processes' geventhttpclient
pools get the same through `rushhour.scenarios.load.pinned_pools`.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable

import httpcore
import httpx

from rushhour.kernel.loopback import connect_addresses

__all__ = ["PinnedBackend", "pinned_transport"]


class PinnedBackend(httpcore.SyncBackend):
    """httpcore's blocking backend, connecting a name at its pinned addresses only (in turn)."""

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.NetworkStream:
        try:
            addresses = connect_addresses(host)
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        failure: httpcore.ConnectError | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
        raise failure or httpcore.ConnectError(f'"{host}" has no address to connect to.')


def pinned_transport(verify: ssl.SSLContext | bool = True, limits: httpx.Limits | None = None) -> httpx.HTTPTransport:
    """An httpx transport (no proxy: it is the client's only one) that connects through PinnedBackend."""
    transport = httpx.HTTPTransport(verify=verify) if limits is None else httpx.HTTPTransport(verify=verify,
                                                                                             limits=limits)
    transport._pool._network_backend = PinnedBackend()  # httpx has no public argument for httpcore's backend
    return transport
