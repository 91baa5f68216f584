"""Chaos Toolkit actions for rushhour on Kubernetes, built on chaostoolkit-kubernetes.

Where chaostoolkit-kubernetes already does the job (terminating pods, cordoning and draining
nodes, scaling Deployments, creating NetworkPolicies) these actions only add rushhour's labels
and names, so an experiment says "the quality pool" instead of a label selector. The cluster
comes from the usual kubeconfig or in-cluster credentials (see chaosk8s).
"""

from __future__ import annotations

from typing import Any

from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets
from chaosk8s.deployment.actions import scale_deployment
from chaosk8s.networking.actions import create_network_policy, remove_network_policy
from chaosk8s.node.actions import cordon_node, drain_nodes, uncordon_node
from chaosk8s.pod.actions import terminate_pods

from experiments.kubernetes.objects import (
    DEFAULT_NAMESPACE,
    GPU_NODE_SELECTOR,
    deployment_name,
    partition_policy,
    policy_name,
    pool_selector,
    replicas_patch,
)

__all__ = [
    "cordon_gpu_nodes",
    "delete_pool_pods",
    "drain_gpu_nodes",
    "heal_pool_partition",
    "partition_pool",
    "scale_pool",
    "uncordon_gpu_nodes",
]


def delete_pool_pods(
    pool: str = "quality",
    qty: int = 1,
    all_pods: bool = False,
    grace_period: int = 0,
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Delete model pods of `pool` (GPU pods for the quality pool), as a lost GPU node would.

    qty: how many pods, in name order; all_pods: every pod of the pool instead.
    grace_period: seconds the pod gets to stop (0: killed at once).
    ns: the namespace rushhour runs in.

    Undone by the Deployment, which schedules replacements; their cold start is the experiment.
    """
    terminate_pods(
        label_selector=pool_selector(pool),
        all=bool(all_pods),
        qty=int(qty),
        grace_period=int(grace_period),
        ns=ns,
        secrets=secrets,
    )
    return {"pool": pool, "qty": "all" if all_pods else int(qty), "namespace": ns}


def cordon_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Mark the GPU nodes unschedulable, so no replacement model pod can land on them.

    label_selector: which nodes; by default those the NVIDIA device plugin labels as GPU nodes.

    Undo with `uncordon_gpu_nodes`.
    """
    return [str(n) for n in cordon_node(label_selector=label_selector, secrets=secrets)]


def uncordon_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Make the GPU nodes schedulable again: the undo of `cordon_gpu_nodes`, `drain_gpu_nodes`."""
    return [str(n) for n in uncordon_node(label_selector=label_selector, secrets=secrets)]


def drain_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    count: int = 1,
    timeout: int = 120,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Cordon and evict `count` GPU nodes, as a maintenance or a failing host would.

    timeout: seconds to wait for the evictions.

    Undo with `uncordon_gpu_nodes`; the evicted pods are rescheduled by their Deployments.
    """
    drained = drain_nodes(
        label_selector=label_selector, count=int(count), timeout=int(timeout), secrets=secrets
    )
    return [str(n) for n in drained or []]


def partition_pool(
    pool: str = "quality",
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Cut every pod of `pool` off the network with a deny-all NetworkPolicy.

    Needs a CNI that enforces NetworkPolicies (Calico, Cilium...); elsewhere nothing breaks.

    Undo with `heal_pool_partition`, which deletes the policy.
    """
    policy = partition_policy(pool, ns)
    create_network_policy(spec=policy, ns=ns, secrets=secrets)
    return {"pool": pool, "policy": policy["metadata"]["name"], "namespace": ns}


def heal_pool_partition(
    pool: str = "quality",
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Delete the partition NetworkPolicy of `pool`; the undo of `partition_pool`."""
    remove_network_policy(name=policy_name(pool), ns=ns, secrets=secrets)
    return {"pool": pool, "policy": policy_name(pool), "namespace": ns}


def scale_pool(
    pool: str = "quality",
    replicas: int = 0,
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Scale the Deployment of `pool`; 0 then back up is a cold start of the whole pool.

    replicas: the replica count to set.

    Undo by scaling back to the manifest's count (2 for quality, 1 for fast).
    """
    try:
        patch = replicas_patch(int(replicas))
    except ValueError as exc:
        raise ActivityFailed(str(exc)) from exc
    replicas_set = patch["spec"]["replicas"]
    scale_deployment(name=deployment_name(pool), replicas=replicas_set, ns=ns, secrets=secrets)
    return {"pool": pool, "deployment": deployment_name(pool), "replicas": replicas_set}
