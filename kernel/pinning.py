"""Host names pinned to the addresses the loopback guard checked, so a later answer cannot redirect.

A name is only as safe as what it resolves to, and it may resolve differently a second later (DNS
rebinding: loopback while the guard looks, a metadata service or another host when the load
connects). So the guard (`rushhour.kernel.loopback.refused_address`) resolves every name it
admits, checks every address, and pins the name here to those addresses; the harness's clients
connect through `rushhour.kernel.loopback.connect_addresses`, never through a fresh lookup of a pinned name. A name the
guard admitted without being able to resolve it (`--allow-remote` and no answer yet) is resolved
once when first contacted, checked by the same rules, and pinned then. A name the guard never saw
is checked as if `--allow-remote` were not given. The pins travel to the Locust processes and to
each `chaos run` in `RUSHHOUR_PINNED_HOSTS` (`pins_env`, `load_pins`). The Host header and a TLS
server name stay the name: only where the socket connects is pinned. httpx clients connect through
`rushhour.kernel.pinned_http`, kept apart so that a process reading the pins need not import httpx.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass

__all__ = ["ENV_PINNED", "Policy", "forget_pins", "late_policy", "load_pins", "pin", "pinned", "pins_env",
           "resolve_host", "set_policy"]

ENV_PINNED = "RUSHHOUR_PINNED_HOSTS"


@dataclass(frozen=True)
class Policy:
    """What the guard allowed a name under: `--allow-remote`, or named on purpose (`allowed_hosts`)."""

    allow_remote: bool = False
    named: bool = False


_PINS: dict[str, tuple[str, ...]] = {}
_LATE: dict[str, Policy] = {}


def resolve_host(host: str) -> tuple[str, ...]:
    """Every address `host` resolves to at the moment of asking (TCP), in the resolver's order; OSError when none."""
    infos = socket.getaddrinfo(host, None, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    return tuple(dict.fromkeys(str(info[4][0]).partition("%")[0] for info in infos))


def pin(host: str, addresses: tuple[str, ...]) -> None:
    """Connect to `host` only at `addresses` from here on (in this process and the Locust ones it starts)."""
    _PINS[host.lower().rstrip(".")] = addresses
    _LATE.pop(host.lower().rstrip("."), None)


def set_policy(host: str, policy: Policy) -> None:
    """`host` was admitted unresolved under `policy`: it is checked under it when first contacted."""
    key = host.lower().rstrip(".")
    if key not in _PINS:
        _LATE[key] = policy


def late_policy(host: str) -> Policy:
    """The policy `host` was admitted unresolved under; without `--allow-remote` when never admitted."""
    return _LATE.get(host.lower().rstrip("."), Policy())


def pinned(host: str) -> tuple[str, ...] | None:
    """The addresses `host` is pinned to (None: not pinned)."""
    return _PINS.get(host.lower().rstrip("."))


def forget_pins() -> None:
    """Drop every pin and late policy (for tests that start afresh)."""
    _PINS.clear()
    _LATE.clear()


def pins_env() -> str:
    """This process's pins and late policies, as the Locust processes and a chaos run read them (`load_pins`)."""
    late = {host: [policy.allow_remote, policy.named] for host, policy in _LATE.items()}
    return json.dumps({"pins": {host: list(addresses) for host, addresses in _PINS.items()}, "late": late})


def load_pins(environ: dict[str, str] | None = None) -> None:
    """Take the pins the starting process handed over in ENV_PINNED (nothing when unset)."""
    raw = (os.environ if environ is None else environ).get(ENV_PINNED)
    if not raw:
        return
    try:
        data = json.loads(raw)
        pins = {str(host): tuple(str(a) for a in addresses) for host, addresses in data["pins"].items()}
        late = {str(host): Policy(bool(flags[0]), bool(flags[1])) for host, flags in data["late"].items()}
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ValueError(f"{ENV_PINNED} is not the JSON of pinned hosts rushhour writes ({exc}).") from exc
    _PINS.update(pins)
    for host, policy in late.items():
        _LATE.setdefault(host, policy)
