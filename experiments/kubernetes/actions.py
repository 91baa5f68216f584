"""Chaos Toolkit actions for rushhour on Kubernetes, built on chaostoolkit-kubernetes.

Where chaostoolkit-kubernetes already does the job (terminating pods, draining nodes, scaling
Deployments, creating NetworkPolicies) these actions only add rushhour's labels and names, so an
experiment says "the quality pool" instead of a label selector. The cluster comes from the usual
kubeconfig or in-cluster credentials (see chaosk8s).

A partition and a cordon carry a lease (`hold_s` plus a margin, see `experiments.leases`): the
object is marked with its expiry and a detached lease keeper sweeps it away when the lease ends,
should the rollback never come (see `experiments.kubernetes.leases`).
"""

from __future__ import annotations

import time
from typing import Any

from chaosk8s import create_k8s_api_client
from chaosk8s.deployment.actions import scale_deployment
from chaosk8s.networking.actions import create_network_policy
from chaosk8s.node.actions import drain_nodes
from chaosk8s.pod.actions import terminate_pods
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets
from kubernetes import client
from kubernetes.client.rest import ApiException

from experiments.kubernetes.leases import sweep
from experiments.kubernetes.objects import (
    DEFAULT_NAMESPACE,
    GPU_NODE_SELECTOR,
    cordon_patch,
    deployment_name,
    partition_policy,
    policy_name,
    pool_selector,
    replicas_patch,
    uncordon_patch,
)
from experiments.leases import lease_s, spawn_keeper

__all__ = [
    "cordon_gpu_nodes",
    "delete_pool_pods",
    "drain_gpu_nodes",
    "heal_pool_partition",
    "partition_pool",
    "scale_pool",
    "uncordon_gpu_nodes",
]

SWEEP_SLACK_S = 1.0


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
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Mark the GPU nodes unschedulable, so no replacement model pod can land on them.

    label_selector: which nodes; by default those the NVIDIA device plugin labels as GPU nodes.
    hold_s: how long the experiment holds the fault; the lease covers it (see `lease_s`).
    ttl_s: the lease when nothing is held.

    Undo with `uncordon_gpu_nodes`; a lease keeper uncordons them when the lease ends.
    """
    return _lease_cordon(_node_names(label_selector, secrets), lease_s(ttl_s, hold_s), secrets)


def uncordon_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Make the GPU nodes schedulable again: the undo of `cordon_gpu_nodes`, `drain_gpu_nodes`."""
    core = client.CoreV1Api(create_k8s_api_client(secrets))
    names = _node_names(label_selector, secrets)
    for name in names:
        _patch_node(core, name, uncordon_patch())
    return names


def drain_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    count: int = 1,
    timeout: int = 120,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Cordon and evict `count` GPU nodes, as a maintenance or a failing host would.

    timeout: seconds to wait for the evictions.
    hold_s, ttl_s: the cordon's lease, as for `cordon_gpu_nodes`.

    Undo with `uncordon_gpu_nodes`; the evicted pods are rescheduled by their Deployments.
    """
    lease = lease_s(ttl_s, hold_s)
    drained = [str(n) for n in drain_nodes(
        label_selector=label_selector, count=int(count), timeout=int(timeout), secrets=secrets
    ) or []]
    return _lease_cordon(drained, lease, secrets)


def partition_pool(
    pool: str = "quality",
    ns: str = DEFAULT_NAMESPACE,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Cut every pod of `pool` off the network with a deny-all NetworkPolicy.

    Needs a CNI that enforces NetworkPolicies (Calico, Cilium...); elsewhere nothing breaks.
    hold_s: how long the experiment holds the fault; the lease covers it (see `lease_s`).
    ttl_s: the lease when nothing is held.

    Undo with `heal_pool_partition`, which deletes the policy; a lease keeper deletes it when
    the lease ends.
    """
    lease = lease_s(ttl_s, hold_s)
    policy = partition_policy(pool, ns, expires_at=time.time() + lease)
    create_network_policy(spec=policy, ns=ns, secrets=secrets)
    keeper = spawn_keeper("sweep_kubernetes", lease + SWEEP_SLACK_S, {"ns": ns})
    return {"pool": pool, "policy": policy["metadata"]["name"], "namespace": ns, "lease_s": lease,
            "lease_keeper_pid": keeper}


def heal_pool_partition(
    pool: str = "quality",
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Delete the partition NetworkPolicy of `pool` (the undo of `partition_pool`), and every
    expired lease of rushhour's in `ns`."""
    networking = client.NetworkingV1Api(create_k8s_api_client(secrets))
    try:
        networking.delete_namespaced_network_policy(policy_name(pool), ns)
    except ApiException as exc:
        if exc.status != 404:
            raise ActivityFailed(f'Could not delete NetworkPolicy "{policy_name(pool)}" in "{ns}": {exc.reason}.') from exc
    swept = sweep(ns, secrets=secrets)
    return {"pool": pool, "policy": policy_name(pool), "namespace": ns, "swept": swept}


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


def _node_names(label_selector: str, secrets: Secrets) -> list[str]:
    core = client.CoreV1Api(create_k8s_api_client(secrets))
    return [str(n.metadata.name) for n in core.list_node(label_selector=label_selector).items if n.metadata]


def _lease_cordon(names: list[str], lease: float, secrets: Secrets) -> list[str]:
    """Cordon `names` with our mark and lease, and start the keeper that undoes it."""
    core = client.CoreV1Api(create_k8s_api_client(secrets))
    for name in names:
        _patch_node(core, name, cordon_patch(time.time() + lease))
    if names:
        spawn_keeper("sweep_kubernetes", lease + SWEEP_SLACK_S, {"ns": DEFAULT_NAMESPACE})
    return names


def _patch_node(core: Any, name: str, body: dict[str, Any]) -> None:
    try:
        core.patch_node(name, body)
    except ApiException as exc:
        raise ActivityFailed(f'Could not patch node "{name}": {exc.reason}.') from exc
