"""The loopback guard: may the harness contact this address, and is it on this machine?

Scenarios refuse a remote target without `--allow-remote`, and every HTTP client of the harness
and of the chaos extension ignores proxy variables when its target is loopback, so the admin
token never travels to a proxy. Some addresses are never contacted, `--allow-remote` or not:
link-local ones (cloud metadata answers at 169.254.169.254 and fe80::/10), the unspecified,
multicast and reserved ones, and the metadata services' names. A host is read the way the C
library reads it, so `2852039166`, `0xa9fea9fe` and `::ffff:169.254.169.254` are the metadata
address too. `refused_address` is the one test every command, the worker and the chaos extension ask.

A host name is resolved when the guard looks at it: every address it has must pass the same rules
(loopback, or any ordinary address under `--allow-remote`; never a special one), and the name is
then pinned to those addresses (`rushhour.kernel.pinning`): the load connects where the guard
looked (`connect_addresses`), so a name that answers differently later cannot redirect it.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from rushhour.kernel.pinning import Policy, late_policy, pin, pinned, resolve_host, set_policy

__all__ = ["METADATA_NAMES", "connect_addresses", "host_address", "is_loopback_host", "is_loopback_url", "is_named_host",
           "refused_address", "special_address"]

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
    return is_loopback_host(_host(url))


def is_loopback_host(host: str) -> bool:
    """True when `host` (a name or an address, without brackets) is this machine only (127.0.0.0/8,
    ::1 or localhost), in any form `host_address` reads."""
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    address = host_address(host) if host else None
    return address is not None and address.is_loopback


def is_named_host(url: str, allowed: tuple[str, ...]) -> bool:
    """True when `url`'s host is one a scenario names on purpose (`load.allowed_hosts`: private
    test addresses, e.g. hosts in network namespaces a test created); never true by default."""
    host = urlsplit(url).hostname or ""
    return bool(host) and host in allowed


_NOT_HERE = ("is not on this machine (127.0.0.0/8, ::1 or localhost); pass --allow-remote to contact a remote "
             "service on purpose")
_NEVER = "; rushhour never contacts one, --allow-remote or not"


def _address_refusal(address: Address, allow_remote: bool) -> str | None:
    """Why the harness may not contact `address` (None: it may): the guard's rules for one address."""
    if address.is_loopback:
        return None
    special = special_address(address)
    if special is not None:
        return f"is {special}{_NEVER}"
    return None if allow_remote else _NOT_HERE


def refused_address(url: str, *, allow_remote: bool, allowed: tuple[str, ...] = ()) -> str | None:
    """Why the harness may not contact `url` (a phrase to follow the quoted URL), or None when it
    may: loopback and hosts named in `allowed` always; other hosts only with `allow_remote`; a
    special address or a metadata service's name never. A name is resolved and every address it
    has must pass; an admitted name is pinned to them (one that does not resolve yet, admitted
    under `allow_remote`, is checked and pinned when first contacted)."""
    host = _host(url)
    if host and is_named_host(url, allowed):
        _admit_named(host)
        return None
    address = host_address(host) if host else None
    if address is not None:
        return _address_refusal(address, allow_remote)
    if host in METADATA_NAMES:
        return f"names a cloud metadata service{_NEVER}"
    if not host:
        return None if allow_remote else _NOT_HERE
    return _name_refusal(host, allow_remote)


def _name_refusal(host: str, allow_remote: bool) -> str | None:
    """Resolve `host`, check every address, pin it to them; why not when one fails."""
    try:
        addresses = resolve_host(host)
    except OSError:
        if host == "localhost":
            pin(host, ("127.0.0.1",))
            return None
        if not allow_remote:
            return _NOT_HERE
        set_policy(host, Policy(allow_remote=True))
        return None
    for text in addresses:
        address = host_address(text)
        reason = "is no address" if address is None else _address_refusal(address, allow_remote)
        if reason is not None:
            return f"resolves to {text}, which {reason}"
    pin(host, addresses)
    return None


def _admit_named(host: str) -> None:
    """A host named on purpose is contacted whatever it resolves to, but only at what it resolved to."""
    if host_address(host) is not None:
        return
    try:
        pin(host, resolve_host(host))
    except OSError:
        set_policy(host, Policy(named=True))


def connect_addresses(host: str) -> tuple[str, ...]:
    """The addresses a connection to `host` may use: an address as it is; a pinned name's
    addresses; any other name resolved once, at its first connection, every address checked under
    the policy it was admitted with (without `--allow-remote` when the guard never saw it), then
    pinned. OSError, a sentence naming the host and the address, when one is refused."""
    host = host.strip("[]")
    if host_address(host) is not None:
        return (host,)
    addresses = pinned(host)
    if addresses is not None:
        return addresses
    policy = late_policy(host)
    addresses = resolve_host(host)
    for text in addresses:
        address = host_address(text)
        reason = "is no address" if address is None else _address_refusal(address, policy.allow_remote)
        if reason is not None and not policy.named:
            raise OSError(f'Refusing to connect to "{host}": it resolves to {text}, which {reason}.')
    pin(host, addresses)
    return addresses
