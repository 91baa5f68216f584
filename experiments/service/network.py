"""Network faults on the path to a user's service, through a Toxiproxy proxy in front of it.

Toxiproxy (github.com/Shopify/toxiproxy) is a TCP proxy made for this: the drill loads the
proxy's listen port, the proxy forwards to the service, and a *toxic* added through its HTTP API
(default 127.0.0.1:8474, loopback only) changes what passes: `latency` (added delay and jitter),
`reset_peer` (connections reset: the errors of a flapping network) or `timeout` with 0 (a
blackhole: data dropped until the toxic is removed). It runs as one user-space process on any
Linux host, with no netem or iptables in the kernel and no root, which is why rushhour uses it
instead of `tc`.

Every toxic rushhour adds is named `rushhour-<type>` and held under a lease: a detached lease
keeper removes it when the lease lapses unrenewed (a killed harness), and `remove_toxics` removes
them all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from rushhour.experiments.leases import (
    hold_lease,
    lease_file,
    lease_s,
    new_lease_file,
    read_lease,
    release,
    spawn_keeper,
    write_lease,
)
from rushhour.kernel.loopback import is_loopback_url

__all__ = ["add_toxic", "keep_toxic_removed", "remove_toxics", "toxics"]

DEFAULT_API = "http://127.0.0.1:8474"
PREFIX = "rushhour-"
TYPES = ("latency", "reset_peer", "timeout", "bandwidth", "slow_close", "limit_data", "slicer")
CHECK_EVERY_S = 1.0


def _api(configuration: Configuration) -> str:
    url = str((configuration or {}).get("toxiproxy_url") or DEFAULT_API).rstrip("/")
    if not is_loopback_url(url):
        raise ActivityFailed(f'toxiproxy_url "{url}" is not on this machine; rushhour drives only a Toxiproxy on '
                             "127.0.0.1, ::1 or localhost.")
    return url


def _call(method: str, url: str, body: dict[str, Any] | None = None) -> httpx.Response:
    try:
        return httpx.request(method, url, json=body, timeout=10.0, trust_env=False, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise ActivityFailed(f"Toxiproxy did not answer {method} {url}: {exc}. Is toxiproxy-server running?") from exc


def _lease_name(proxy: str, toxic: str) -> str:
    return f"toxic-{proxy}-{toxic}"


def add_toxic(proxy: str, toxic_type: str, attributes: dict[str, Any] | None = None, stream: str = "downstream",
              hold_s: float = 0.0, ttl_s: float = 60.0, configuration: Configuration = None,
              secrets: Secrets = None) -> dict[str, Any]:
    """Add a toxic named `rushhour-<toxic_type>` to the Toxiproxy proxy `proxy`.

    proxy: the proxy's name (`toxiproxy-cli create -l 127.0.0.1:LISTEN -u HOST:PORT NAME`).
    toxic_type: latency ({"latency": ms, "jitter": ms}), reset_peer ({"timeout": ms}), timeout
    ({"timeout": 0} is a blackhole), or another Toxiproxy toxic type.
    attributes: the toxic's attributes, as Toxiproxy documents them.
    stream: "downstream" (service to client) or "upstream".
    hold_s: how long the experiment holds the fault; a short lease is renewed meanwhile.
    ttl_s: the lease when nothing is held.

    Undo with `remove_toxics`. Toxiproxy keeps a toxic until told otherwise, so a detached lease
    keeper removes it once the lease lapses unrenewed (a killed harness).
    """
    if toxic_type not in TYPES:
        raise ActivityFailed(f'"{toxic_type}" is not a Toxiproxy toxic type ({", ".join(TYPES)}).')
    if stream not in ("downstream", "upstream"):
        raise ActivityFailed(f'stream "{stream}" is neither downstream nor upstream.')
    api, name = _api(configuration), f"{PREFIX}{toxic_type}"
    lease = lease_s(ttl_s, hold_s)
    path = new_lease_file(_lease_name(proxy, name), lease)
    keeper = spawn_keeper("remove_toxic", lease, {"api": api, "proxy": proxy, "toxic": name, "lease_file": str(path)})
    body = {"name": name, "type": toxic_type, "stream": stream, "toxicity": 1.0, "attributes": attributes or {}}
    response = _call("POST", f"{api}/proxies/{proxy}/toxics", body)
    if response.status_code != 200:
        path.unlink(missing_ok=True)  # nothing was added: its keeper may go
        raise ActivityFailed(f'Toxiproxy refused the toxic "{name}" on proxy "{proxy}" (HTTP {response.status_code}): '
                             f"{response.text[:200]}")
    hold_lease(f"toxic|{proxy}|{name}", lambda seconds: write_lease(path, seconds), lease, float(hold_s))
    return {"proxy": proxy, "toxic": name, "attributes": attributes or {}, "lease_s": lease,
            "lease_keeper_pid": keeper}


def toxics(proxy: str, configuration: Configuration = None, secrets: Secrets = None) -> list[str]:
    """The names of the toxics on `proxy` now (a probe)."""
    response = _call("GET", f"{_api(configuration)}/proxies/{proxy}/toxics")
    if response.status_code != 200:
        raise ActivityFailed(f'Toxiproxy has no proxy "{proxy}" (HTTP {response.status_code}).')
    return [str(t.get("name")) for t in response.json()]


def _delete(api: str, proxy: str, name: str) -> bool:
    return _call("DELETE", f"{api}/proxies/{proxy}/toxics/{name}").status_code in (200, 204)


def remove_toxics(proxy: str, configuration: Configuration = None, secrets: Secrets = None) -> list[str]:
    """Remove every toxic rushhour added to `proxy` (named `rushhour-*`); returns their names."""
    api = _api(configuration)
    ours = [name for name in toxics(proxy, configuration) if name.startswith(PREFIX)]
    removed = [name for name in ours if _delete(api, proxy, name)]
    release(f"toxic|{proxy}|")
    for name in ours:
        lease_file(_lease_name(proxy, name)).unlink(missing_ok=True)  # undone: its keeper may go
    return removed


def keep_toxic_removed(api: str, proxy: str, toxic: str, lease_file: str, after_s: float,
                       clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep) -> str:
    """The lease keeper's loop for a toxic: "undone" once its lease file is gone (the rollback
    removed it), "healed" after removing the toxic when the lease lapsed unrenewed."""
    path, deadline = Path(lease_file), clock() + after_s
    while True:
        end = read_lease(path)
        if end is None:
            return "undone"
        deadline = end
        if clock() >= deadline:
            _delete(api, proxy, toxic)
            path.unlink(missing_ok=True)
            return "healed"
        sleep(min(CHECK_EVERY_S, max(0.0, deadline - clock())))
