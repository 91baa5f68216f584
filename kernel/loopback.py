"""The loopback guard: may the harness contact this address, and is it on this machine?

Scenarios refuse a remote target without `--allow-remote`, and every HTTP client of the harness
and of the chaos extension ignores proxy variables when its target is loopback, so the admin
token never travels to a proxy. Some addresses are never contacted, `--allow-remote` or not:
link-local ones (cloud metadata answers at 169.254.169.254 and fe80::/10), the unspecified,
multicast and reserved ones, and the metadata services' names. A host is read the way the C
library reads it, so `2852039166`, `0xa9fea9fe` and `::ffff:169.254.169.254` are the metadata
address too. `refused_address` is the one test every command, the worker and the chaos extension ask.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

__all__ = ["METADATA_NAMES", "host_address", "is_loopback_url", "is_named_host", "refused_address",
           "special_address"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "metadata.goog", "instance-data",
                            "instance-data.ec2.internal", "metadata.azure.internal"})
"""Host names of cloud metadata services (they resolve to a link-local address)."""


def _host(url: str) -> str:
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    return host.lower().rstrip(".")


def host_address(host: str) -> Address | None:
    """`host` as an IP address, in any form the C library accepts (dotted, decimal, hex, short
    IPv4; IPv6 with an IPv4-mapped address read as that IPv4 address); None for a name."""
    try:
        address: Address = ipaddress.ip_address(host)
    except ValueError:
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, ValueError):
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def special_address(address: Address) -> str | None:
    """What makes an address no host to contact (None: nothing): link-local (cloud metadata lives
    at 169.254.169.254), unspecified, multicast or reserved."""
    for test, what in ((address.is_link_local, "a link-local address (169.254.0.0/16, fe80::/10: e.g. cloud metadata)"),
                       (address.is_unspecified, "the unspecified address"), (address.is_multicast, "a multicast address"),
                       (address.is_reserved, "a reserved address")):
        if test:
            return what
    return None


def is_loopback_url(url: str) -> bool:
    """True when `url` points at this machine only (127.0.0.0/8, ::1 or localhost)."""
    host = _host(url)
    if host == "localhost":
        return True
    address = host_address(host) if host else None
    return address is not None and address.is_loopback


def is_named_host(url: str, allowed: tuple[str, ...]) -> bool:
    """True when `url`'s host is one a scenario names on purpose (`load.allowed_hosts`: private
    test addresses, e.g. hosts in network namespaces a test created); never true by default."""
    host = urlsplit(url).hostname or ""
    return bool(host) and host in allowed


def refused_address(url: str, *, allow_remote: bool, allowed: tuple[str, ...] = ()) -> str | None:
    """Why the harness may not contact `url` (a phrase to follow the quoted URL), or None when it
    may: loopback and hosts named in `allowed` always; other hosts only with `allow_remote`; a
    special address or a metadata service's name never."""
    host = _host(url)
    if is_loopback_url(url) or (host and is_named_host(url, allowed)):
        return None
    address = host_address(host) if host else None
    special = special_address(address) if address is not None else None
    if special is not None:
        return f"is {special}; rushhour never contacts one, --allow-remote or not"
    if host in METADATA_NAMES:
        return "names a cloud metadata service; rushhour never contacts one, --allow-remote or not"
    if not allow_remote:
        return "is not on this machine (127.0.0.0/8, ::1 or localhost); pass --allow-remote to contact a remote service on purpose"
    return None
