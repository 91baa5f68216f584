"""Leases of the Kubernetes faults: find what rushhour left in a cluster and remove what expired.

Kubernetes has no TTL for a NetworkPolicy or a cordon, so rushhour marks each one it creates
(the `rushhour.io/chaos` label on policies, `rushhour.io/cordoned-by` on nodes) with its lease's
end (`rushhour.io/lease-expires-at`). `sweep` lists every marked object and removes the expired
ones; it is what a lease keeper runs when a lease ends, what the rollbacks run, and what the
drill's leak audit runs. It never touches an object without rushhour's mark.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from chaoslib.types import Configuration, Secrets

from experiments.kubernetes.objects import CHAOS_LABEL, CORDONED_BY, DEFAULT_NAMESPACE, lease_expiry, uncordon_patch

__all__ = ["Leftover", "sweep"]


@dataclass(frozen=True)
class Leftover:
    """One object of ours found in the cluster, and whether the sweep removed it."""

    kind: str
    name: str
    expires_at: float | None
    removed: bool


def _apis(secrets: Secrets) -> tuple[Any, Any]:
    from chaosk8s import create_k8s_api_client
    from kubernetes import client

    api = create_k8s_api_client(secrets)
    return client.NetworkingV1Api(api), client.CoreV1Api(api)


def _expired(expires_at: float | None, now: float) -> bool:
    return expires_at is not None and expires_at <= now


def sweep(ns: str = DEFAULT_NAMESPACE, now: float | None = None, networking: Any = None, core: Any = None,
          configuration: Configuration = None, secrets: Secrets = None) -> list[dict[str, Any]]:
    """Remove rushhour's expired NetworkPolicies in `ns` and uncordon its expired cordons;
    return every object of ours found, removed or not (removed: True when the sweep did it).

    ns: the namespace rushhour runs in.
    now: the time to judge leases by (epoch seconds; default now).
    """
    when = time.time() if now is None else float(now)
    if networking is None or core is None:
        networking, core = _apis(secrets)
    found: list[Leftover] = []
    for policy in networking.list_namespaced_network_policy(ns, label_selector=CHAOS_LABEL).items:
        expires_at = lease_expiry(policy.metadata.annotations)
        expired = _expired(expires_at, when)
        if expired:
            networking.delete_namespaced_network_policy(policy.metadata.name, ns)
        found.append(Leftover("NetworkPolicy", f"{ns}/{policy.metadata.name}", expires_at, expired))
    for node in core.list_node().items:
        annotations = node.metadata.annotations or {}
        if CORDONED_BY not in annotations:
            continue
        expires_at = lease_expiry(annotations)
        expired = _expired(expires_at, when) or expires_at is None
        if expired:
            core.patch_node(node.metadata.name, uncordon_patch())
        found.append(Leftover("Node", node.metadata.name, expires_at, expired))
    return [asdict(item) for item in found]
