"""Target URLs and addresses, checked and quoted: the scheme, host and port of a URL before the
loopback guard looks at it, credentials hidden wherever a URL is shown, and the addresses that are
no test host."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["check_target_url", "hide_userinfo", "special_address"]


def hide_userinfo(url: str) -> str:
    """`url` with any user:password@ replaced by ***@, fit to quote in an error."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]).geturl()


def check_target_url(url: str) -> None:
    """Raise ValueError (a sentence quoting the URL, userinfo hidden) unless `url` is http(s)
    with a host and, when it gives one, a port from 1 to 65535."""
    shown = hide_userinfo(url)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f'"{shown}" must start with http:// or https://.')
    if not parts.hostname:
        raise ValueError(f'"{shown}" has no host; write e.g. "http://127.0.0.1:8000".')
    host_port = parts.netloc.rsplit("@", 1)[-1]
    if not host_port.startswith("[") and host_port.count(":") > 1:
        raise ValueError(f'"{shown}" has an IPv6 address without brackets; a URL writes it as '
                         f'"{parts.scheme}://[{host_port}]" (and a port after the bracket).')
    port = _port_text(parts.netloc)
    if port and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(f'"{shown}" has port "{port}", which is not a number from 1 to 65535.')


def _port_text(netloc: str) -> str:
    """What follows the host's last colon ("" when none), for IPv6 "[::1]:80" as well."""
    host_port = netloc.rsplit("@", 1)[-1]
    if host_port.startswith("["):
        return host_port.partition("]")[2].removeprefix(":")
    return host_port.partition(":")[2]


def special_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """What makes an address no test host (None: nothing): link-local (cloud metadata lives at
    169.254.169.254), unspecified, multicast or reserved."""
    for test, what in ((address.is_link_local, "a link-local address (169.254.0.0/16, fe80::/10: e.g. cloud metadata)"),
                       (address.is_unspecified, "the unspecified address"), (address.is_multicast, "a multicast address"),
                       (address.is_reserved, "a reserved address")):
        if test:
            return what
    return None
