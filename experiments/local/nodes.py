"""Reading the cluster's nodes from `/v1/status` and choosing which one a fault hits.

Experiments must be repeatable, so "any ready node of pool X" is not random: it is the ready node
with the lowest index (`quality-0` before `quality-1` before `quality-10`).
"""

from __future__ import annotations

import re
from typing import Any

from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.client import AdminClient

__all__ = ["UP_STATES", "choose_node", "list_nodes", "node_ids", "sort_key"]

UP_STATES = ("starting", "warming", "ready")


def list_nodes(client: AdminClient, pool: str = "") -> list[dict[str, Any]]:
    """Every node the server reports, optionally only those of `pool`, in index order."""
    status = client.get_json("/v1/status")
    nodes = [n for n in status.get("nodes", []) if not pool or n.get("pool") == pool]
    return sorted(nodes, key=lambda n: sort_key(str(n.get("id", ""))))


def node_ids(client: AdminClient, pool: str) -> list[str]:
    """All node ids of `pool`; an empty pool is an error because the fault would hit nothing."""
    ids = [str(n["id"]) for n in list_nodes(client, pool)]
    if not ids:
        raise ActivityFailed(f'Pool "{pool}" has no nodes at {client.url}.')
    return ids


def choose_node(client: AdminClient, node_id: str, pool: str) -> str:
    """`node_id` when given, else the first ready node of `pool`."""
    if node_id:
        return node_id
    ready = [n for n in list_nodes(client, pool) if n.get("state") == "ready"]
    if not ready:
        raise ActivityFailed(f'Pool "{pool}" has no ready node to act on at {client.url}.')
    return str(ready[0]["id"])


def sort_key(node_id: str) -> tuple[str, int, str]:
    """Natural order: `quality-2` sorts before `quality-10`."""
    match = re.fullmatch(r"(.*?)-?(\d+)", node_id)
    if match is None:
        return (node_id, -1, node_id)
    return (match.group(1), int(match.group(2)), node_id)
