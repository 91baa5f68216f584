"""Kubernetes objects the chaos actions create or patch, built apart from any API call.

Keeping the builders pure lets the tests check every object against the official client's
models without a cluster, and keeps the labels that tie manifests, policies and selectors
together in one place.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APP_LABEL",
    "CHAOS_LABEL",
    "CORDONED_BY",
    "LEASE_ANNOTATION",
    "DEFAULT_NAMESPACE",
    "GPU_NODE_SELECTOR",
    "POOL_LABEL",
    "SCALED_FROM",
    "cordon_patch",
    "deployment_name",
    "lease_patch",
    "lease_expiry",
    "partition_policy",
    "policy_name",
    "pool_selector",
    "replicas_patch",
    "restore_patch",
    "scale_down_patch",
    "uncordon_patch",
]

APP_LABEL = "app.kubernetes.io/name"
POOL_LABEL = "rushhour.io/pool"
DEFAULT_NAMESPACE = "rushhour"
GPU_NODE_SELECTOR = "nvidia.com/gpu.present=true"
CHAOS_LABEL = "rushhour.io/chaos"
LEASE_ANNOTATION = "rushhour.io/lease-expires-at"  # epoch seconds, as a string
CORDONED_BY = "rushhour.io/cordoned-by"
SCALED_FROM = "rushhour.io/scaled-from"  # a Deployment rushhour scaled down: its replica count before


def deployment_name(pool: str) -> str:
    """The Deployment that runs `pool` (see reference_server/k8s/pool-*.yaml)."""
    return f"rushhour-{pool}"


def policy_name(pool: str) -> str:
    return f"rushhour-chaos-partition-{pool}"


def pool_selector(pool: str) -> str:
    """Label selector of the pods of `pool`, as the pod and node actions take it."""
    return f"{APP_LABEL}=rushhour-node,{POOL_LABEL}={pool}"


def partition_policy(pool: str, namespace: str = DEFAULT_NAMESPACE, *, expires_at: float | None = None) -> dict[str, Any]:
    """A deny-all NetworkPolicy on the pods of `pool`: no ingress, no egress.

    An empty rule list under both policy types is what denies everything; the gateway's calls
    then hang or fail as in a real partition (enforced only where the CNI implements policies).
    `expires_at` (epoch seconds) is the lease: a sweep deletes the policy once it has passed.
    """
    metadata: dict[str, Any] = {
        "name": policy_name(pool),
        "namespace": namespace,
        "labels": {APP_LABEL: "rushhour", CHAOS_LABEL: "partition"},
    }
    if expires_at is not None:
        metadata["annotations"] = {LEASE_ANNOTATION: _epoch(expires_at)}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata,
        "spec": {
            "podSelector": {"matchLabels": {APP_LABEL: "rushhour-node", POOL_LABEL: pool}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": [],
        },
    }


def replicas_patch(replicas: int) -> dict[str, Any]:
    """Merge patch of a Deployment's replica count (scale to zero and back: a cold start)."""
    if replicas < 0:
        raise ValueError(f"A Deployment cannot have {replicas} replicas.")
    return {"spec": {"replicas": replicas}}


def cordon_patch(expires_at: float) -> dict[str, Any]:
    """Strategic merge patch of a Node: unschedulable, marked as ours with its lease."""
    return {"metadata": {"annotations": {CORDONED_BY: "rushhour", LEASE_ANNOTATION: _epoch(expires_at)}},
            "spec": {"unschedulable": True}}


def uncordon_patch() -> dict[str, Any]:
    """The undo of `cordon_patch`: schedulable again, our marks removed (null deletes a key)."""
    return {"metadata": {"annotations": {CORDONED_BY: None, LEASE_ANNOTATION: None}},
            "spec": {"unschedulable": False}}


def lease_patch(expires_at: float) -> dict[str, Any]:
    """Merge patch that renews the lease of a marked object (policy, node or Deployment)."""
    return {"metadata": {"annotations": {LEASE_ANNOTATION: _epoch(expires_at)}}}


def scale_down_patch(replicas: int, before: int, expires_at: float) -> dict[str, Any]:
    """Merge patch of a Deployment scaled down by rushhour: the new count, marked with the count
    to restore and its lease, so a sweep can scale it back if the rollback never comes."""
    if replicas < 0:
        raise ValueError(f"A Deployment cannot have {replicas} replicas.")
    return {"metadata": {"annotations": {SCALED_FROM: str(int(before)), LEASE_ANNOTATION: _epoch(expires_at)}},
            "spec": {"replicas": replicas}}


def restore_patch(replicas: int) -> dict[str, Any]:
    """The undo of `scale_down_patch`: the count back, rushhour's marks removed."""
    return {"metadata": {"annotations": {SCALED_FROM: None, LEASE_ANNOTATION: None}}, "spec": {"replicas": int(replicas)}}


def lease_expiry(annotations: dict[str, str] | None) -> float | None:
    """The lease's end (epoch seconds) from an object's annotations; None if it has none, or
    0.0 (long expired) if it is unreadable, so a mangled mark never keeps a fault alive."""
    raw = (annotations or {}).get(LEASE_ANNOTATION)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        return 0.0


def _epoch(value: float) -> str:
    return f"{float(value):.3f}"
