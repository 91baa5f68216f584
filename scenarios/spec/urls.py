"""Target URLs and addresses, checked and quoted: the scheme, host and port of a URL before the
loopback guard looks at it, credentials hidden wherever a URL is shown, and the guard itself as a
sentence naming the field (`guard_url`) that every command asks about every address it contacts."""

from __future__ import annotations

from urllib.parse import urlsplit

from rushhour.kernel.loopback import refused_address, special_address

__all__ = ["check_target_url", "guard_url", "hide_userinfo", "special_address"]


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


def guard_url(url: str, *, field: str, allow_remote: bool, allowed: tuple[str, ...] = ()) -> None:
    """Raise ValueError (a sentence naming `field` and quoting the URL, userinfo hidden) unless the
    loopback guard lets the harness contact `url` (`rushhour.kernel.loopback.refused_address`: a
    host name is resolved, every address checked, and the name pinned to them for the load)."""
    reason = refused_address(url, allow_remote=allow_remote, allowed=allowed)
    if reason is not None:
        raise ValueError(f'{field}: "{hide_userinfo(url)}" {reason}.')
