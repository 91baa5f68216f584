"""Renewing the leases of faults held on the reference server's nodes (see `rushhour.experiments.leases`).

The gateway times every fault and every held-down kill out by itself; while an experiment holds
one, this process renews it through `POST /admin/nodes/{id}/lease` every few seconds. A rollback
that heals the node stops the renewals at once; a killed process stops them by dying, and the
gateway heals the node one lease later.
"""

from __future__ import annotations

from rushhour.experiments.client import AdminClient
from rushhour.experiments.leases import hold_lease, release

__all__ = ["hold_node", "release_node", "release_server"]


def _key(client: AdminClient, node: str) -> str:
    return f"{client.url}|{node}"


def hold_node(client: AdminClient, node: str, lease: float, hold_s: float) -> None:
    """Renew what is held on `node` (faults, a kill without restart) for `hold_s` plus the margin."""

    def renew(seconds: float) -> bool:
        return bool(client.post(f"/admin/nodes/{node}/lease", {"ttl_s": seconds}).get("held"))

    hold_lease(_key(client, node), renew, lease, float(hold_s))


def release_node(client: AdminClient, node: str) -> None:
    """Stop renewing `node`'s lease (a rollback healed it)."""
    release(_key(client, node))


def release_server(client: AdminClient) -> None:
    """Stop renewing every lease held on this server (a reset healed everything)."""
    release(f"{client.url}|")
