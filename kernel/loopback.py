"""The loopback guard's one test: is a URL on this machine (127.0.0.0/8, ::1 or localhost)?

Scenarios refuse a remote target without `--allow-remote`, and every HTTP client of the harness
and of the chaos extension ignores proxy variables when its target is loopback, so the admin
token never travels to a proxy. Both ask here.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["is_loopback_url", "is_named_host"]


def is_loopback_url(url: str) -> bool:
    """True when `url` points at this machine only (127.0.0.0/8, ::1 or localhost)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_named_host(url: str, allowed: tuple[str, ...]) -> bool:
    """True when `url`'s host is one a scenario names on purpose (`load.allowed_hosts`: private
    test addresses, e.g. hosts in network namespaces a test created); never true by default."""
    host = urlsplit(url).hostname or ""
    return bool(host) and host in allowed
