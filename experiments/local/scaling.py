"""Scaling a pool of the local reference server under a lease: the pool goes back to its size by itself.

The gateway keeps a pool at whatever size it was last given, so a scale is the one fault of the
reference server that it would not undo on its own. `scale_with_lease` therefore records the
pool's size before the first scale, and before scaling starts a lease keeper (see
`rushhour.experiments.leases`) that scales the pool back to that size when its lease lapses:
`ttl_s` when nothing holds it, or a short lease this process renews through `hold_s` and the
margin. Scaling back to the recorded size (the usual rollback), `restore_pool` or `reset` ends the
lease, and the keeper sees the pool whole again and exits. The keeper is handed the admin token in
its environment, never on its command line.
"""

from __future__ import annotations

import os
from typing import Any

from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.client import AdminClient
from rushhour.experiments.leases import (
    hold_lease,
    lease_file,
    lease_s,
    new_lease_file,
    release,
    spawn_keeper,
    write_lease,
)
from rushhour.experiments.local.nodes import list_nodes

__all__ = ["TOKEN_ENV", "end_leases", "pool_size_is", "restore", "restore_pool_size", "scale_with_lease"]

TOKEN_ENV = "RUSHHOUR_ADMIN_TOKEN"
_ORIGINAL: dict[str, int] = {}
"""The size each pool had before this process first scaled it (key: server URL | pool)."""


def _key(url: str, pool: str) -> str:
    return f"{url}|pool:{pool}"


def _lease_name(url: str, pool: str) -> str:
    return f"scale-{url}-{pool}"


def scale_with_lease(client: AdminClient, pool: str, nodes: int, ttl_s: float, hold_s: float) -> dict[str, Any]:
    """Give `pool` `nodes` nodes, under a lease that restores its original size (module doc)."""
    if int(nodes) < 0:
        raise ActivityFailed(f"A pool cannot have {nodes!r} nodes.")
    key, name = _key(client.url, pool), _lease_name(client.url, pool)
    original = _ORIGINAL.get(key)
    if original is not None and int(nodes) == original:
        return {**_restore(client, pool, original), "nodes": original}
    lease = lease_s(ttl_s, hold_s)
    if original is None:
        original = len(list_nodes(client, pool))
        if original == int(nodes):  # no change: nothing to undo
            return {"pool": pool, "nodes": original, "response": client.post(f"/admin/pools/{pool}/scale",
                                                                             {"nodes": original})}
        path = new_lease_file(name, lease)
        _ORIGINAL[key] = original
        keeper: int | None = spawn_keeper("restore_pool_size", lease,
                                          {"url": client.url, "pool": pool, "nodes": original, "lease_file": str(path)},
                                          {TOKEN_ENV: client.token})
    else:
        path, keeper = lease_file(name), None
        write_lease(path, lease)
    response = client.post(f"/admin/pools/{pool}/scale", {"nodes": int(nodes)})
    hold_lease(key, lambda seconds: write_lease(path, seconds), lease, float(hold_s))
    return {"pool": pool, "nodes": int(nodes), "original_nodes": original, "lease_s": lease,
            "lease_keeper_pid": keeper, "response": response}


def _restore(client: AdminClient, pool: str, original: int) -> dict[str, Any]:
    """Scale back to the recorded size and end the lease (its keeper sees the pool whole and goes)."""
    key = _key(client.url, pool)
    response = client.post(f"/admin/pools/{pool}/scale", {"nodes": original})
    release(key)
    lease_file(_lease_name(client.url, pool)).unlink(missing_ok=True)
    _ORIGINAL.pop(key, None)
    return {"pool": pool, "restored": True, "response": response}


def restore(client: AdminClient, pool: str) -> dict[str, Any]:
    """The undo of `scale_with_lease`: the size recorded before the first scale (nothing when none)."""
    original = _ORIGINAL.get(_key(client.url, pool))
    if original is None:
        return {"pool": pool, "restored": False}
    return {**_restore(client, pool, original), "nodes": original}


def end_leases(client: AdminClient) -> None:
    """A reset restored every pool: end the scale leases held on this server."""
    for key in [k for k in _ORIGINAL if k.startswith(f"{client.url}|pool:")]:
        pool = key.split("|pool:", 1)[1]
        release(key)
        lease_file(_lease_name(client.url, pool)).unlink(missing_ok=True)
        _ORIGINAL.pop(key, None)


def restore_pool_size(url: str, pool: str, nodes: int) -> None:
    """The lease keeper's undo: scale `pool` at `url` back to `nodes` (the token from its environment)."""
    AdminClient(url=url, token=os.environ.get(TOKEN_ENV, "")).post(f"/admin/pools/{pool}/scale", {"nodes": int(nodes)})


def pool_size_is(url: str, pool: str, nodes: int) -> bool:
    """The lease keeper's probe: `pool` at `url` has its original `nodes` (unreachable: not whole)."""
    try:
        return len(list_nodes(AdminClient(url=url), pool)) == int(nodes)
    except ActivityFailed:
        return False
