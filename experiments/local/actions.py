"""Chaos Toolkit actions against a local rushhour reference server (`rushhour serve`).

Every action goes through the server's bearer-token admin API. Node-level faults (partition,
latency, errors, slowdown) sit in the gateway's fault proxy and heal themselves after their lease,
so a drill that dies half-way never leaves a node broken for good. An experiment passes its hold
as `hold_s`; the fault then gets a short lease (20 s) that this process renews every 5 s through
the hold and a margin (`rushhour.experiments.local.held`), so the rollback heals it, and a killed drill
leaves it for at most one lease, however long the hold (see `rushhour.experiments.leases`). Process-level faults
(kill, restart) do not heal themselves; pair them with `recover_pool` or `reset` in the
rollbacks. A scale has a lease like the node faults: the pool returns to its size by itself
(`rushhour.experiments.local.scaling`).

A node is chosen by `node_id`, or, when that is empty, as the first ready node of `pool`.
"""

from __future__ import annotations

from typing import Any

from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from rushhour.experiments.client import AdminClient, client_from
from rushhour.experiments.leases import LEASE_MARGIN_S, lease_s
from rushhour.experiments.local.held import hold_node, release_node, release_server
from rushhour.experiments.local.nodes import UP_STATES, choose_node, list_nodes, node_ids
from rushhour.experiments.local.scaling import end_leases, restore, scale_with_lease

__all__ = [
    "LEASE_MARGIN_S",
    "add_latency",
    "flush_cache",
    "heal_node",
    "heal_pool",
    "inject_errors",
    "kill_node",
    "kill_pool",
    "lease_s",
    "partition_node",
    "partition_pool",
    "recover_pool",
    "reset",
    "restart_node",
    "restore_pool",
    "restart_pool",
    "scale_pool",
    "slow_down_node",
    "slow_down_pool",
]

PARTITION_KINDS = {"blackhole": "partition", "reset": "reset"}
MAX_SLOWDOWN = 20.0


def kill_node(
    node_id: str = "",
    pool: str = "quality",
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Lose one GPU node: SIGKILL its process, as when the machine under it dies.

    node_id: the node to kill (e.g. "quality-1"); empty picks the first ready node of `pool`.
    pool: the pool to pick from when `node_id` is empty.

    Undo with `restart_node` on the same id, `recover_pool`, or `reset`.
    """
    client = client_from(configuration, secrets)
    node = choose_node(client, node_id, pool)
    return {"node": node, "response": client.post(f"/admin/nodes/{node}/kill")}


def restart_node(
    node_id: str = "",
    pool: str = "quality",
    warm: bool = True,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Restart one node; with `warm=False` it is a cold start that skips the warm-up inferences.

    node_id: the node to restart; empty picks the first ready node of `pool`.
    pool: the pool to pick from when `node_id` is empty.
    warm: run the warm-up before reporting ready (True) or serve cold (False), so that the first
    requests pay for graph optimisation and allocation.

    Nothing to undo: the node comes back by itself; its slow first requests are the experiment.
    """
    client = client_from(configuration, secrets)
    node = choose_node(client, node_id, pool)
    response = client.post(f"/admin/nodes/{node}/restart", {"warm": bool(warm)})
    return {"node": node, "warm": bool(warm), "response": response}


def partition_node(
    node_id: str = "",
    pool: str = "quality",
    mode: str = "blackhole",
    ttl_s: float = 60.0,
    hold_s: float = 0.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Cut the network between the gateway and one node.

    node_id: the node to cut off; empty picks the first ready node of `pool`.
    pool: the pool to pick from when `node_id` is empty.
    mode: "blackhole" swallows traffic (callers wait for their timeouts) or "reset" refuses
    connections at once (callers fail fast).
    ttl_s: seconds after which the fault proxy heals the node by itself.
    hold_s: how long the experiment holds the fault; its short lease is renewed meanwhile (see `lease_s`).

    Undo with `heal_node` on the same id, `heal_pool`, or `reset`.
    """
    if mode not in PARTITION_KINDS:
        raise ActivityFailed(f'Partition mode "{mode}" is not one of "blackhole" or "reset".')
    client = client_from(configuration, secrets)
    node = choose_node(client, node_id, pool)
    return _fault(client, node, {"kind": PARTITION_KINDS[mode], "ttl_s": lease_s(ttl_s, hold_s)}, hold_s)


def add_latency(
    node_id: str = "",
    pool: str = "quality",
    latency_ms: float = 500.0,
    jitter_ms: float = 0.0,
    ttl_s: float = 60.0,
    hold_s: float = 0.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Make every call to one node slow in the network, as a congested link would: latency only,
    the node's own capacity is untouched (see `slow_down_node` for a slower GPU).

    node_id: the node to slow down; empty picks the first ready node of `pool`.
    pool: the pool to pick from when `node_id` is empty.
    latency_ms: delay added to every call from the gateway to the node.
    jitter_ms: random extra delay, uniformly up to this many milliseconds.
    ttl_s: seconds after which the fault proxy heals the node by itself.
    hold_s: how long the experiment holds the fault; its short lease is renewed meanwhile (see `lease_s`).

    Undo with `heal_node`, `heal_pool`, or `reset`.
    """
    client = client_from(configuration, secrets)
    node = choose_node(client, node_id, pool)
    spec = {
        "kind": "latency",
        "latency_ms": float(latency_ms),
        "jitter_ms": float(jitter_ms),
        "ttl_s": lease_s(ttl_s, hold_s),
    }
    return _fault(client, node, spec, hold_s)


def inject_errors(
    node_id: str = "",
    pool: str = "quality",
    error_rate: float = 0.5,
    ttl_s: float = 60.0,
    hold_s: float = 0.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Make a share of one node's answers fail with a server error.

    node_id: the node to break; empty picks the first ready node of `pool`.
    pool: the pool to pick from when `node_id` is empty.
    error_rate: the share of calls answered with an error, between 0 and 1.
    ttl_s: seconds after which the fault proxy heals the node by itself.
    hold_s: how long the experiment holds the fault; its short lease is renewed meanwhile (see `lease_s`).

    Undo with `heal_node`, `heal_pool`, or `reset`.
    """
    if not 0.0 <= float(error_rate) <= 1.0:
        raise ActivityFailed(f"error_rate {error_rate!r} is not between 0 and 1.")
    client = client_from(configuration, secrets)
    node = choose_node(client, node_id, pool)
    spec = {"kind": "errors", "error_rate": float(error_rate), "ttl_s": lease_s(ttl_s, hold_s)}
    return _fault(client, node, spec, hold_s)


def heal_node(
    node_id: str = "quality-0", configuration: Configuration = None, secrets: Secrets = None
) -> dict[str, Any]:
    """Remove every fault of the fault proxy (partition, latency, errors, slowdown) from one node.

    node_id: the node to heal. It is the undo of `partition_node`, `add_latency`, `inject_errors`
    and `slow_down_node`; it does not bring back a killed node (use `recover_pool`).
    """
    client = client_from(configuration, secrets)
    release_node(client, node_id)
    return {"node": node_id, "response": client.delete(f"/admin/nodes/{node_id}/faults")}


def heal_pool(
    pool: str = "quality", configuration: Configuration = None, secrets: Secrets = None
) -> dict[str, Any]:
    """Remove every fault-proxy fault from every node of `pool`; the undo of `partition_pool`,
    `slow_down_pool` and of every single-node fault in that pool."""
    client = client_from(configuration, secrets)
    healed = node_ids(client, pool)
    for node in healed:
        release_node(client, node)
        client.delete(f"/admin/nodes/{node}/faults")
    return {"pool": pool, "nodes": healed}


def partition_pool(
    pool: str = "quality",
    mode: str = "blackhole",
    ttl_s: float = 60.0,
    hold_s: float = 0.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Cut the network to every node of `pool` at once: the pool is alive but unreachable.

    mode: "blackhole" (traffic swallowed) or "reset" (connections refused).
    ttl_s: seconds after which each node heals by itself.
    hold_s: how long the experiment holds the fault; its short lease is renewed meanwhile (see `lease_s`).

    Undo with `heal_pool` or `reset`.
    """
    if mode not in PARTITION_KINDS:
        raise ActivityFailed(f'Partition mode "{mode}" is not one of "blackhole" or "reset".')
    client = client_from(configuration, secrets)
    spec = {"kind": PARTITION_KINDS[mode], "ttl_s": lease_s(ttl_s, hold_s)}
    nodes = node_ids(client, pool)
    for node in nodes:
        _fault(client, node, spec, hold_s)
    return {"pool": pool, "nodes": nodes, "fault": spec}


def slow_down_node(
    node_id: str = "",
    pool: str = "quality",
    factor: float = 1.5,
    ttl_s: float = 60.0,
    hold_s: float = 0.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Make one node's GPU slower: its compute time is multiplied by `factor` (thermal
    throttling, a noisy neighbour, a slower build). The node stays busy longer per batch, so its
    capacity drops, not only its latency; the queue in front of it grows under load.

    node_id: the node to slow down; empty picks the first ready node of `pool`.
    pool: the pool to pick from when `node_id` is empty.
    factor: the compute time multiplier, from 1 (no change) to 20; 2 halves the node's throughput.
    ttl_s: seconds after which the fault proxy restores full speed by itself.
    hold_s: how long the experiment holds the fault; its short lease is renewed meanwhile (see `lease_s`).

    Undo with `heal_node` on the same id, `heal_pool`, or `reset`.
    """
    client = client_from(configuration, secrets)
    node = choose_node(client, node_id, pool)
    return _fault(client, node, _slowdown_spec(factor, ttl_s, hold_s), hold_s)


def slow_down_pool(
    pool: str = "quality",
    factor: float = 1.5,
    ttl_s: float = 60.0,
    hold_s: float = 0.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Make every node of `pool` slower at once: each node's compute time is multiplied by
    `factor`, as when a whole GPU fleet throttles or a slower build rolls out. The pool's
    capacity divides by `factor`; whether the SLOs survive depends on the headroom.

    pool: the pool whose every node (ready or not) is slowed.
    factor: the compute time multiplier, from 1 (no change) to 20.
    ttl_s: seconds after which each node returns to full speed by itself.
    hold_s: how long the experiment holds the fault; its short lease is renewed meanwhile (see `lease_s`).

    Undo with `heal_pool` or `reset`.
    """
    spec = _slowdown_spec(factor, ttl_s, hold_s)
    client = client_from(configuration, secrets)
    nodes = node_ids(client, pool)
    for node in nodes:
        _fault(client, node, spec, hold_s)
    return {"pool": pool, "nodes": nodes, "fault": spec}


def kill_pool(
    pool: str = "quality", configuration: Configuration = None, secrets: Secrets = None
) -> dict[str, Any]:
    """Lose every node of `pool` (e.g. all GPUs down): does the service degrade to another pool?

    Undo with `recover_pool` (or `reset`).
    """
    client = client_from(configuration, secrets)
    nodes = node_ids(client, pool)
    for node in nodes:
        client.post(f"/admin/nodes/{node}/kill")
    return {"pool": pool, "nodes": nodes}


def restart_pool(
    pool: str = "quality",
    warm: bool = False,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Restart every node of `pool` at once; the default `warm=False` is a cold-start storm.

    warm: run warm-up inferences before serving (True) or serve cold (False).

    Nothing to undo: the nodes come back by themselves.
    """
    client = client_from(configuration, secrets)
    nodes = node_ids(client, pool)
    for node in nodes:
        client.post(f"/admin/nodes/{node}/restart", {"warm": bool(warm)})
    return {"pool": pool, "nodes": nodes, "warm": bool(warm)}


def recover_pool(
    pool: str = "quality",
    warm: bool = True,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Restart every node of `pool` that is down; the undo of `kill_node` and `kill_pool`.

    warm: warm the restarted nodes up before they serve (the default, so recovery is clean).
    Nodes that are starting, warming or ready are left alone.
    """
    client = client_from(configuration, secrets)
    down = [str(n["id"]) for n in list_nodes(client, pool) if n.get("state") not in UP_STATES]
    for node in down:
        client.post(f"/admin/nodes/{node}/restart", {"warm": bool(warm)})
    return {"pool": pool, "restarted": down}


def scale_pool(
    pool: str = "quality",
    nodes: int = 1,
    ttl_s: float = 600.0,
    hold_s: float = 0.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Set the number of nodes in `pool`; new nodes start and warm up like a scale-out would.

    nodes: the target node count (0 removes the pool's capacity entirely).
    ttl_s: seconds after which a lease keeper scales the pool back to its original size.
    hold_s: how long the experiment holds the scale; its short lease is renewed meanwhile (see `lease_s`).

    Undo by scaling back to the original count, `restore_pool` or `reset`; the lease ends with it.
    """
    return scale_with_lease(client_from(configuration, secrets), pool, int(nodes), ttl_s, hold_s)


def restore_pool(pool: str = "quality", configuration: Configuration = None, secrets: Secrets = None) -> dict[str, Any]:
    """Scale `pool` back to the size it had before `scale_pool` first changed it; the lease ends."""
    return restore(client_from(configuration, secrets), pool)


def flush_cache(configuration: Configuration = None, secrets: Secrets = None) -> dict[str, Any]:
    """Empty the gateway's caches, so every request goes to the model again (a thundering herd).

    Nothing to undo: the cache refills from traffic.
    """
    return {"response": client_from(configuration, secrets).post("/admin/cache/flush")}


def reset(configuration: Configuration = None, secrets: Secrets = None) -> dict[str, Any]:
    """Heal everything the admin API can break: the last rollback of every experiment."""
    client = client_from(configuration, secrets)
    release_server(client)
    response = client.post("/admin/reset")
    end_leases(client)
    return {"response": response}


def _slowdown_spec(factor: float, ttl_s: float, hold_s: float) -> dict[str, Any]:
    value = float(factor)
    if not 1.0 <= value <= MAX_SLOWDOWN:  # NaN fails this too
        raise ActivityFailed(f"A slowdown factor must be between 1 and {MAX_SLOWDOWN:g}, not {factor!r}.")
    return {"kind": "slowdown", "factor": value, "ttl_s": lease_s(ttl_s, hold_s)}


def _fault(client: AdminClient, node: str, spec: dict[str, Any], hold_s: float = 0.0) -> dict[str, Any]:
    response = client.post(f"/admin/nodes/{node}/faults", spec)
    hold_node(client, node, float(spec["ttl_s"]), float(hold_s))
    return {"node": node, "fault": spec, "response": response}
