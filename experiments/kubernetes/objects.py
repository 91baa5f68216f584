"""Kubernetes objects the chaos actions create or patch, built apart from any API call.

Keeping the builders pure lets the tests check every object against the official client's
models without a cluster, and keeps the labels that tie manifests, policies and selectors
together in one place.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APP_LABEL",
    "DEFAULT_NAMESPACE",
    "GPU_NODE_SELECTOR",
    "POOL_LABEL",
    "deployment_name",
    "partition_policy",
    "policy_name",
    "pool_selector",
    "replicas_patch",
]

APP_LABEL = "app.kubernetes.io/name"
POOL_LABEL = "rushhour.io/pool"
DEFAULT_NAMESPACE = "rushhour"
GPU_NODE_SELECTOR = "nvidia.com/gpu.present=true"


def deployment_name(pool: str) -> str:
    """The Deployment that runs `pool` (see reference_server/k8s/pool-*.yaml)."""
    return f"rushhour-{pool}"


def policy_name(pool: str) -> str:
    return f"rushhour-chaos-partition-{pool}"


def pool_selector(pool: str) -> str:
    """Label selector of the pods of `pool`, as the pod and node actions take it."""
    return f"{APP_LABEL}=rushhour-node,{POOL_LABEL}={pool}"


def partition_policy(pool: str, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
    """A deny-all NetworkPolicy on the pods of `pool`: no ingress, no egress.

    An empty rule list under both policy types is what denies everything; the gateway's calls
    then hang or fail as in a real partition (enforced only where the CNI implements policies).
    """
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": policy_name(pool),
            "namespace": namespace,
            "labels": {APP_LABEL: "rushhour", "rushhour.io/chaos": "partition"},
        },
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
