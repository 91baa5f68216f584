"""httpx transports that connect a host name only at the addresses the loopback guard pinned.

`PinnedBackend` is httpcore's blocking backend with one change: it connects a name at
`rushhour.kernel.loopback.connect_addresses` (the pinned addresses, or a name the guard never saw
resolved once and checked), never through a fresh lookup. `pinned_transport` is an httpx transport
built on it, for every httpx client that contacts a guarded target: the commands' clients (through
`rushhour.scenarios.protocols.admission.admitted_client`) and the chaos extension's admin client
(`rushhour.experiments.client`), which takes the drill's pins from `RUSHHOUR_PINNED_HOSTS`. The
request's Host header and TLS server name stay the name. It lives in the kernel, apart from the
pins (`rushhour.kernel.pinning`), so that a Locust process reads the pins without importing httpx.
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
